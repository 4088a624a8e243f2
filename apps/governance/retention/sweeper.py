"""Steward's own expirable tables, swept in bounded batches that never hold long locks.

Each table names the retention rule (its app's governed.py) that expires its rows,
the time column, and the window after which a row may go. A batch is one short
transaction in the owning tenant's scope (row-level security lets nothing else delete
a tenant's rows), through apps.core.bulk, the hourly purges' mechanism too: it
claims the ids of at most n expired rows once, with FOR UPDATE SKIP LOCKED, and deletes
those, so concurrent sweeps share the work and a row someone holds is left for later.
A batch's transaction is the longest any of its row locks is held; each one is timed,
and the batch size adapts so that none takes much longer than the target.

Tenants under an active tenant-wide legal hold keep their rows: a hold always wins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.db import connection

from apps.core import bulk
from apps.core.scope import owner_scope, system_scope
from apps.governance.models import ExportArtifact


@dataclass(frozen=True)
class OwnTable:
    rule: str  # the retention rule name, as the table's app's governed.py names it
    model: str  # app_label.Model
    time_field: str
    window: Callable[[], timedelta]
    condition: str = ""  # more SQL the expired rows meet
    tenant_owned: bool = True

    @property
    def label(self) -> str:
        return self.model


def _inbox_window() -> timedelta:
    return timedelta(hours=settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"])


def _dead_letter_window() -> timedelta:
    return timedelta(days=settings.STEWARD_RETENTION_DEAD_LETTERS_DAYS)


def _idempotency_window() -> timedelta:
    return settings.STEWARD_IDEMPOTENCY_TTL


# Dispatched outbox rows ("outbox-dispatched") are deleted by the dispatcher in the
# transaction that publishes them, so no dispatched row is left for a sweep.
OWN_TABLES: tuple[OwnTable, ...] = (
    OwnTable("inbox-window", "eventing.InboxEntry", "handled_at", _inbox_window),
    OwnTable("inbox-window", "eventing.RecentEvent", "received_at", _inbox_window),
    OwnTable(
        "dead-letters-resolved",
        "eventing.DeadLetter",
        "resolved_at",
        _dead_letter_window,
        condition="state IN ('replayed', 'discarded')",
    ),
    OwnTable(
        "idempotency-ttl",
        "core.IdempotencyRecord",
        "created_at",
        _idempotency_window,
        tenant_owned=False,
    ),
)


@dataclass
class TableResult:
    rule: str
    cutoff: str
    rows: int = 0
    batches: int = 0
    max_lock_ms: float = 0.0
    longest_batch_rows: int = 0
    held_tenants: int = 0
    lookup_ms: float = 0.0  # finding the tenants with expired rows
    duration_ms: float = 0.0

    def add_batch(self, rows: int, elapsed_ms: float) -> None:
        self.rows += rows
        self.batches += 1
        if elapsed_ms > self.max_lock_ms:
            self.max_lock_ms, self.longest_batch_rows = elapsed_ms, rows

    def as_dict(self) -> dict:
        return {
            "rule": self.rule,
            "cutoff": self.cutoff,
            "rows": self.rows,
            "batches": self.batches,
            "max_lock_ms": round(self.max_lock_ms, 1),
            "longest_batch_rows": self.longest_batch_rows,
            "held_tenants": self.held_tenants,
            "lookup_ms": round(self.lookup_ms, 1),
            "duration_ms": round(self.duration_ms, 1),
        }


@dataclass
class Batching:
    """The batch size, adapted after each batch so one takes about `target_ms`."""

    size: int
    target_ms: float
    largest: int = 50_000
    smallest: int = 100
    timings: list[float] = field(default_factory=list)

    def __post_init__(self):
        self.size = min(self.size, self.largest)

    def after(self, elapsed_ms: float, deleted: int) -> None:
        self.timings.append(elapsed_ms)
        if deleted < self.size or elapsed_ms <= 0:
            return
        scaled = int(self.size * min(2.0, max(0.25, self.target_ms / elapsed_ms)))
        self.size = min(self.largest, max(self.smallest, scaled))


def _sql(table: OwnTable) -> tuple[str, str, str]:
    model = apps.get_model(table.model)
    db_table = model._meta.db_table
    column = model._meta.get_field(table.time_field).column
    condition = f" AND ({table.condition})" if table.condition else ""
    return db_table, column, condition


def _owners(table: OwnTable, cutoff: datetime, held: frozenset) -> tuple[list, int]:
    """The tenants (None: platform rows) that have expired rows, and how many of them
    a hold keeps."""
    owners = bulk.owners_with_rows_before(
        apps.get_model(table.model), table.time_field, cutoff, table.condition
    )
    kept = [owner for owner in owners if owner is not None and str(owner) in held]
    return [owner for owner in owners if owner not in kept], len(kept)


def _delete_batch(table: OwnTable, owner, cutoff: datetime, size: int) -> int:
    return bulk.delete_batch(
        apps.get_model(table.model),
        table.time_field,
        cutoff,
        owner=owner,
        size=size,
        condition=table.condition,
    )


def sweep_table(
    table: OwnTable, *, as_of: datetime, held_tenants: frozenset, batching: Batching
) -> TableResult:
    began = time.perf_counter()
    cutoff = as_of - table.window()
    result = TableResult(rule=table.rule, cutoff=cutoff.isoformat())
    owners, result.held_tenants = _owners(table, cutoff, held_tenants)
    result.lookup_ms = (time.perf_counter() - began) * 1000
    for owner in owners:
        while True:
            size = batching.size
            started = time.perf_counter()
            # Its own transaction (commit included in the timing): the lock time.
            deleted = _delete_batch(table, owner, cutoff, size)
            elapsed_ms = (time.perf_counter() - started) * 1000
            batching.after(elapsed_ms, deleted)
            result.add_batch(deleted, elapsed_ms)
            if deleted < size:
                break
    result.duration_ms = (time.perf_counter() - began) * 1000
    return result


def expired_counts(*, as_of: datetime, held_tenants: frozenset) -> dict[str, int]:
    """How many rows of each table a sweep at `as_of` would remove (for the preview)."""
    counts = {}
    for table in OWN_TABLES:
        db_table, column, condition = _sql(table)
        cutoff = as_of - table.window()
        held = ""
        params: list = [cutoff]
        if table.tenant_owned and held_tenants:
            held = " AND (tenant_id IS NULL OR NOT (tenant_id::text = ANY(%s)))"
            params.append(sorted(held_tenants))
        with system_scope(), connection.cursor() as cursor:
            cursor.execute(
                f'SELECT count(*) FROM {db_table} WHERE "{column}" < %s{condition}{held}',  # noqa: S608
                params,
            )
            counts[table.label] = cursor.fetchone()[0]
    with system_scope():
        counts["governance.ExportArtifact"] = (
            ExportArtifact.objects.filter(expires_at__lt=as_of, deleted_at__isnull=True)
            .exclude(tenant_id__in=list(held_tenants))
            .count()
        )
    return counts


def _remove_export_file(path: str) -> bool:
    """Remove an artifact's file if it lies under the export directory; False when it
    was already gone or points elsewhere (never followed)."""
    root = Path(settings.STEWARD_EXPORT_DIR).resolve()
    file = (root / path).resolve()
    if root not in file.parents:
        return False
    try:
        file.unlink()
    except FileNotFoundError:
        return False
    return True


def sweep_expired_export_artifacts(
    *, as_of: datetime, held_tenants: frozenset, batching: Batching
) -> TableResult:
    """Expired export archives: the file is removed and the row marked deleted (it stays
    as the record of the export), tenant by tenant in bounded batches. An artifact is
    past its `expires_at`, so it is unavailable whether or not the batch commits."""
    table = ExportArtifact._meta.db_table
    result = TableResult(rule="export-artifact-expiry", cutoff=as_of.isoformat())
    with system_scope():
        owners = list(
            ExportArtifact.objects.filter(expires_at__lt=as_of, deleted_at__isnull=True)
            .values_list("tenant_id", flat=True)
            .distinct()
        )
    held = [owner for owner in owners if str(owner) in held_tenants]
    result.held_tenants = len(held)
    files = 0
    for owner in owners:
        if owner in held:
            continue
        while True:
            size = batching.size
            started = time.perf_counter()
            with owner_scope(owner), connection.cursor() as cursor:
                cursor.execute(
                    f"WITH batch AS MATERIALIZED ("  # noqa: S608 - names only
                    f" SELECT id FROM {table} WHERE expires_at < %s AND deleted_at IS NULL"
                    f" AND tenant_id = %s LIMIT {int(size)} FOR UPDATE SKIP LOCKED)"
                    f" UPDATE {table} SET deleted_at = %s"
                    " WHERE id = ANY(ARRAY(SELECT id FROM batch)) RETURNING path",
                    [as_of, owner, as_of],
                )
                paths = [row[0] for row in cursor.fetchall()]
                files += sum(_remove_export_file(path) for path in paths)
            elapsed_ms = (time.perf_counter() - started) * 1000
            batching.after(elapsed_ms, len(paths))
            result.add_batch(len(paths), elapsed_ms)
            if len(paths) < size:
                break
    return result.as_dict() | {"files_removed": files}


def sweep_own_tables(*, as_of: datetime, held_tenants: frozenset) -> dict:
    """Sweep every table in OWN_TABLES; {table label: TableResult.as_dict()}. Each
    table adapts its own batch size: rows cost differently from table to table."""
    results = {
        table.label: sweep_table(
            table, as_of=as_of, held_tenants=held_tenants, batching=new_batching()
        ).as_dict()
        for table in OWN_TABLES
    }
    results["governance.ExportArtifact"] = sweep_expired_export_artifacts(
        as_of=as_of, held_tenants=held_tenants, batching=new_batching()
    )
    return results


def new_batching() -> Batching:
    return Batching(
        size=settings.STEWARD_RETENTION_SWEEP_BATCH,
        target_ms=settings.STEWARD_RETENTION_BATCH_TARGET_MS,
        largest=settings.STEWARD_RETENTION_SWEEP_BATCH_MAX,
    )
