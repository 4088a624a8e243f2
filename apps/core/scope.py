"""The tenant scope of a database transaction.

Row-level security policies (apps.tenancy.rls installs them) compare every
tenant-owned row with two transaction-local settings, `steward.tenant_id` and
`steward.system`. These two context managers are the only code that sets them:

    with tenant_scope(tenant):   # reads and writes that tenant's rows only
    with system_scope():         # reads every tenant's rows, writes none

Each opens a transaction (a savepoint when nested) and sets the scope with
`set_config(..., is_local => true)`, so the scope can never outlive the transaction
and a pooled connection handed to the next request starts with no scope, which
reads as zero rows. Leaving a nested scope restores the outer one.

Scopes only narrow: inside a tenant scope, entering another tenant or the system
scope raises ScopeViolation, so a request acting for tenant A cannot reach B
through a service that opens a scope of its own.

The scope is the ground of every app, so it lives in core, the bottom layer: tenancy
(models, RLS policies, the request middleware) and every domain app build on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.db import connection, transaction


class ScopeViolation(RuntimeError):
    """A scope was requested that would widen the current one."""


@dataclass(frozen=True)
class Scope:
    tenant_id: uuid.UUID | None = None
    system: bool = False

    @property
    def is_empty(self) -> bool:
        return self.tenant_id is None and not self.system


NO_SCOPE = Scope()
_current: ContextVar[Scope] = ContextVar("steward_scope", default=NO_SCOPE)


def current_scope() -> Scope:
    return _current.get()


def _apply(scope: Scope) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('steward.tenant_id', %s, true), "
            "set_config('steward.system', %s, true)",
            [str(scope.tenant_id) if scope.tenant_id else "", "on" if scope.system else ""],
        )


@contextmanager
def _enter(scope: Scope, *, reads_only: bool = False) -> Iterator[Scope]:
    outer = _current.get()
    if outer.tenant_id is not None and scope.tenant_id != outer.tenant_id:
        raise ScopeViolation(
            f"cannot leave the scope of tenant {outer.tenant_id} for "
            f"{'the system' if scope.system else f'tenant {scope.tenant_id}'}"
        )
    outermost = not connection.in_atomic_block
    if reads_only and scope == outer and not outermost:
        # Reads in the scope the caller's transaction holds: a savepoint would only let
        # a caller catch a failed write and go on, and there are none; two round trips
        # each (an operator's eventing page opened three such blocks).
        yield scope
        return
    if scope == outer and not outermost:
        # The same scope again (an audit row or an emit inside the request's own
        # scope): its settings are this transaction's already, and a rollback to the
        # savepoint leaves them as they are, so setting and restoring them would be two
        # round trips for nothing. The savepoint stays: a caller may still catch an
        # error raised inside and go on.
        with transaction.atomic():
            yield scope
        return
    with transaction.atomic():
        token = _current.set(scope)
        try:
            _apply(scope)
            yield scope
            # The end of the transaction discards an outermost scope's setting, and a
            # rollback (an exception, or a block marked for rollback by an error
            # response) restores the outer one by itself; otherwise restore it here.
            if not outermost and not transaction.get_rollback():
                _apply(outer)
        finally:
            _current.reset(token)


def _tenant_id(tenant) -> uuid.UUID:
    if isinstance(tenant, uuid.UUID):
        return tenant
    if isinstance(tenant, str):
        return uuid.UUID(tenant)
    if getattr(tenant, "pk", None) is None:
        raise ValueError("tenant_scope needs a saved tenant or a tenant id")
    return tenant.pk


def tenant_scope(tenant) -> contextmanager:
    """Act for one tenant: read and write only its rows."""
    return _enter(Scope(tenant_id=_tenant_id(tenant)))


def system_scope(*, reads_only: bool = False) -> contextmanager:
    """Read across tenants (operators, pollers, sweepers); writes need a tenant scope.
    A block that only reads says `reads_only`: inside the system scope already, it then
    runs in the caller's transaction as it stands, with no savepoint of its own."""
    return _enter(Scope(system=True), reads_only=reads_only)


def owner_scope(tenant) -> contextmanager:
    """The scope that may write a row owned by `tenant`: that tenant's, or the system
    scope for a platform-wide row (no tenant), where the policies allow it."""
    return tenant_scope(tenant) if tenant is not None else system_scope()


def owning_tenant_id(obj) -> uuid.UUID | None:
    """The tenant an object belongs to: its `tenant_id`, or its own id for a tenant (a
    model that declares `IS_TENANT = True`, as apps.tenancy.models.Tenant does)."""
    return obj.pk if getattr(obj, "IS_TENANT", False) else getattr(obj, "tenant_id", None)
