"""The scope a view's request runs in, as the view declares it.

A view (a function, or a class through its attribute) sets `steward_scope`; the request
middleware (apps.tenancy.middleware.TenantScopeMiddleware) reads it and opens the
scope. These markers are in core, beneath tenancy, so that core's own views (probes,
/metrics) can declare theirs.
"""

from __future__ import annotations

# What a view may declare as `steward_scope` (a function attribute or a class attribute):
NO_SCOPE = "none"  # no request transaction and no scope
SYSTEM_SCOPE = "system"  # platform pages: the system scope for platform-wide callers


def unscoped(view):
    """Mark a view that runs outside any request scope and transaction: probes, and the
    login page, whose lockout bookkeeping must not depend on who was signed in before."""
    view.steward_scope = NO_SCOPE
    return view


def platform_scope(view):
    """Mark a platform page: operators and platform services use it in the system
    scope even while they act for one tenant (it reads or writes across tenants)."""
    view.steward_scope = SYSTEM_SCOPE
    return view


def any_tenant_status(view):
    """Mark a view a person may use whatever the status of the tenant they act for:
    signing out, switching tenant, a display preference (apps.tenancy.middleware)."""
    view.steward_any_tenant_status = True
    return view


def governance_work(view):
    """Mark a view of governance's own work that goes on while the tenant it concerns is
    suspended or offboarding: owners answering their tasks (receipts, bundles), and
    checking evidence, which changes nothing. Nothing else under governance is exempt:
    new orders and holds are writes like any other (apps.tenancy.middleware)."""
    view.steward_governance_work = True
    return view
