"""Governance: tenant deletion and export orders, retention, and Steward as an owner of
its own tables. One Django app (app_label "governance", so no table moves), in parts:

    models/         every model, re-exported from apps.governance.models
    orders/         orders and the owner tasks they issue: services (approval, run,
                    owner_tasks, overdue), selectors, phases, evidence, exports,
                    filters, the console (views, forms, urls)
    retention/      rules, legal holds and the nightly sweep: policy, services,
                    selectors, sweeper, filters, the console (views, forms, urls)
    steward_owner/  Steward answering the owner tasks addressed to it
    api/            the REST API of orders, owner tasks and retention
    permissions.py  who may govern a tenant (orders and retention alike)
    coverage.py     what deletion and export do with each app's tables (apps.core.governed)
    codes.py        the stable error codes governance raises (GovernanceCode)
    tasks.py        the Celery tasks

"Task" has one meaning per word:
- an *owner task* is a GovernanceTask: work addressed to an owning service (a phase of
  an order, a purge of the retention sweep). Functions about them are named
  `owner_task_*` (`owner_task_issue`, `owner_task_complete`, ...); the model, its
  table, its API (`/api/v1/governance/tasks/`) and its events keep their names.
- a *Celery task* lives in tasks.py, and nowhere else; its registered name
  (`governance.run_steward_task`, ...) is what beat and the services send by.
"""
