"""Tenants (by id or slug) and service accounts (by name) in the console's search
(apps.core.search); a slug or name exact, by its start in any case, or like it
(apps.core.search.named)."""

from __future__ import annotations

from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.core.search import Match, Query, named
from apps.tenancy import selectors

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    tenants = selectors.tenants_visible_to(
        platform_wide=request.platform_wide, tenant=request.tenant
    )
    found: list[Match] = []
    if query.uuid is not None:
        shown = list(tenants.filter(pk=query.uuid)[:SHOWN])
    elif query.name is not None:
        shown = named(tenants, query.name, field="slug", shown=SHOWN)
    else:
        return []
    found += [
        Match("Tenant", tenant.slug, tenant.get_absolute_url(), tenant.name) for tenant in shown
    ]
    # Service accounts are listed for operators and tenant admins only, as their pages.
    if query.name is not None and caller_kind(request) in (OPERATOR, TENANT_ADMIN):
        accounts = named(selectors.service_account_list(), query.name, shown=SHOWN)
        found += [
            Match(
                "Service account",
                account.name,
                account.get_absolute_url(),
                account.tenant.slug if account.tenant_id else "platform-wide",
            )
            for account in accounts
        ]
    return found
