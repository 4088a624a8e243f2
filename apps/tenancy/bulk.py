"""Bulk maintenance of tenant rows, always in the owning tenant's scope."""

from __future__ import annotations

from django.db import connection, transaction

from apps.tenancy.scope import owner_scope, system_scope

BATCH = 1000


def delete_in_owner_scopes(model, time_field: str, older_than) -> int:
    """Delete `model` rows whose `time_field` is before `older_than`, tenant by tenant.

    Reads which tenants have such rows in the system scope, then deletes each tenant's
    rows in that tenant's scope (platform-wide rows in the system scope), in batches
    claimed with SKIP LOCKED so concurrent sweeps share the work and never deadlock.
    """
    table = model._meta.db_table
    column = model._meta.get_field(time_field).column
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f'SELECT DISTINCT tenant_id FROM {table} WHERE "{column}" < %s',  # noqa: S608
            [older_than],
        )
        tenants = [row[0] for row in cursor.fetchall()]
    total = 0
    for tenant_id in tenants:
        while True:
            with transaction.atomic(), owner_scope(tenant_id):
                with connection.cursor() as cursor:
                    owner = "tenant_id = %s" if tenant_id else "tenant_id IS NULL"
                    params = [older_than, tenant_id] if tenant_id else [older_than]
                    cursor.execute(
                        f"DELETE FROM {table} WHERE id IN ("  # noqa: S608 - names only
                        f' SELECT id FROM {table} WHERE "{column}" < %s AND {owner}'
                        f" LIMIT {BATCH} FOR UPDATE SKIP LOCKED)",
                        params,
                    )
                    deleted = cursor.rowcount
            total += deleted
            if deleted < BATCH:
                break
    return total
