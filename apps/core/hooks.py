"""What each app contributes to the shared parts of Steward, found by module name.

The ground (core, tenancy) and the console shell must not import the domain apps, yet
the set-up installs every app's demo data, `/metrics` serves every app's gauges and
governance covers every app's tables. Each app contributes through a module of its
own with a fixed name, found as Django's admin finds `admin.py`:

| module         | holds                                                              |
|----------------|--------------------------------------------------------------------|
| `install.py`   | what every set-up installs, by step (apps.core.setup):             |
|                | `install_topics(report)`, `install_reference_data(report)`,        |
|                | `install_schedules(report)`, `install_consumers(report)`; an app   |
|                | defines the steps it needs                                         |
| `demo.py`      | `install_demo_data(report) -> list[str]`: the app's demo rows, and |
|                | phrases naming them for the set-up's report                        |
| `gauges.py`    | `collect()`: the app's Prometheus metric families (`/metrics`)     |
| `governed.py`  | `GOVERNED` and `EXEMPT`: what governance does with its tables      |
| `dashboard.py` | `dashboard_panels(request) -> list[DashboardPanel]`: the app's     |
|                | figures on the console dashboard (apps.console.panels)             |
| `attention.py` | `KINDS`: what of the app's can wait on a person, and the actions   |
|                | that resolve it (apps.core.attention, apps.attention)              |
| `search.py`    | `find(query, request) -> list[Match]`: the app's objects named by  |
|                | an identifier or exact name (apps.core.search)                     |

An app without the module contributes nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from django.apps import apps


def app_modules(name: str) -> list[ModuleType]:
    """Every installed app's `<app>.<name>` module, in INSTALLED_APPS order."""
    found = []
    for config in apps.get_app_configs():
        dotted = f"{config.name}.{name}"
        if importlib.util.find_spec(dotted) is not None:
            found.append(importlib.import_module(dotted))
    return found
