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

The same rules, in SQL, live here too, and nowhere else:

- `SESSION_TENANT` and `SESSION_IS_SYSTEM` read the two settings the way the policies
  do (apps.tenancy.rls builds them from these);
- the `PLPGSQL_*` fragments set them inside a database function that does a scoped
  job in one statement. One such function exists: the Workflow Service's callback
  receipt (`steward_record_workflow_callback`, migration assets.0008), looked up
  across tenants and then written in the owning tenant's scope, one round trip where
  the ORM took nine (docs/performance.md, the assets benchmark). The function runs
  with the caller's rights, so row-level security applies to its statements exactly
  as to Python's; it refuses to run inside a tenant's scope (scopes only narrow),
  narrows from the system scope to the tenant it found, and restores the caller's
  scope before it returns.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.db import connection, transaction

TENANT_SETTING = "steward.tenant_id"
SYSTEM_SETTING = "steward.system"

# Evaluated once per statement, in a scalar sub-select; an unset scope reads as NULL
# and false, so the policies fail closed.
SESSION_TENANT = f"(SELECT NULLIF(current_setting('{TENANT_SETTING}', true), '')::uuid)"
SESSION_IS_SYSTEM = f"(SELECT coalesce(current_setting('{SYSTEM_SETTING}', true), '') = 'on')"

# PL/pgSQL: the caller's scope, declared first, so the function can refuse a tenant's
# scope and restore whatever it was at the end.
PLPGSQL_DECLARE_OUTER_SCOPE = f"""
    outer_tenant text := coalesce(current_setting('{TENANT_SETTING}', true), '');
    outer_system text := coalesce(current_setting('{SYSTEM_SETTING}', true), '');"""
PLPGSQL_ENTER_SYSTEM = f"PERFORM set_config('{SYSTEM_SETTING}', 'on', true);"
PLPGSQL_LEAVE_SYSTEM = f"PERFORM set_config('{SYSTEM_SETTING}', '', true);"
PLPGSQL_LEAVE_TENANT = f"PERFORM set_config('{TENANT_SETTING}', '', true);"
PLPGSQL_RESTORE_OUTER_SCOPE = f"""
    PERFORM set_config('{TENANT_SETTING}', outer_tenant, true);
    PERFORM set_config('{SYSTEM_SETTING}', outer_system, true);"""


def plpgsql_refuse_tenant_scope(message: str) -> str:
    """Raise `message` when called inside a tenant's scope, which it would widen."""
    quoted = message.replace("'", "''")
    return f"IF outer_tenant <> '' THEN\n        RAISE EXCEPTION '{quoted}';\n    END IF;"


def plpgsql_narrow_to_tenant(tenant: str) -> str:
    """From the system scope to the scope of the tenant the expression `tenant` holds."""
    narrow = f"PERFORM set_config('{TENANT_SETTING}', {tenant}::text, true);"
    return f"{PLPGSQL_LEAVE_SYSTEM}\n        {narrow}"


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
            f"SELECT set_config('{TENANT_SETTING}', %s, true), "
            f"set_config('{SYSTEM_SETTING}', %s, true)",
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
