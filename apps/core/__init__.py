"""Steward's ground: the tenant scope, the API base, jobs, the outbox port, the set-up
and /metrics. The bottom layer: core imports no other app.

The layers, bottom to top (pyproject.toml [tool.importlinter], checked by
`lint-imports` in `make lint` and `make test`):

    core < tenancy < console < registry < eventing < assets | stores | compute
         < governance < portal

Where core needs what the apps above it have (their demo data, gauges, dashboard
figures), each app contributes it through a module of its own (apps.core.hooks).
"""
