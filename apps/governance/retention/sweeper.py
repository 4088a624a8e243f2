"""Steward's own tables, governed by the retention rules and legal holds as owners'
data is, and swept in bounded batches that never hold long locks.

Each table holds one of Steward's data classes (OWN_CLASSES, `steward-…`): the rules
naming that class decide how long its rows are kept and what happens after
(policy.own_table_decision); with no enabled rule the rows are kept. Set-up installs
one rule per class that has a default (apps.governance.install), its period taken from
the class's setting; an operator changes or locks it like any rule.
A tenant's active hold that is tenant-wide or names the class keeps the tenant's rows.
Open work is never expired: each app says which rows of its governed tables are open
work (`OPEN_WORK` in its governed.py, label -> SQL), and every sweep and preview skips
them, however old (open_work()).

A batch is one short transaction in the owning tenant's scope (row-level security lets
nothing else delete a tenant's rows), through apps.core.bulk: it claims the ids of at
most n expired rows once, with FOR UPDATE SKIP LOCKED, and deletes those, so
concurrent sweeps share the work and a row someone holds is left for later. A batch's
transaction is the longest any of its row locks is held; each one is timed, and the
batch size adapts so that none takes much longer than the target.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.core import bulk
from apps.core.hooks import app_modules
from apps.core.scope import owner_scope, system_scope
from apps.governance.models import ExportArtifact
from apps.governance.orders import archive_store
from apps.governance.retention.policy import OwnDecision
from apps.governance.steward_owner.deletion import redact_audit_before

DELETE, REDACT = "delete", "redact"


def _hours_as_days(hours: int) -> int:
    return max(1, math.ceil(hours / 24))


# The deduplication window DESIGN promises (72 h): no rule keeps the inbox shorter. The
# rule in force is the window (selectors.inbox_window): consumers remember handled
# events that long, and a re-drive (apps.eventing.redrive) goes back no further.
INBOX_MINIMUM_DAYS = 3


def _inbox_window_days() -> int:
    """The period of the rule set-up installs: the setting, never below the minimum."""
    hours = settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    return max(INBOX_MINIMUM_DAYS, _hours_as_days(hours))


@dataclass(frozen=True)
class OwnClass:
    """One class of Steward's own data: what a rule naming it may ask (`actions`), and
    the rule set-up installs for it (`default_days`; None: none, the rows are kept
    until an operator adds a rule)."""

    slug: str
    name: str
    sensitivity: str
    actions: tuple[str, ...] = (DELETE,)
    default_days: Callable[[], int] | None = None
    setting: str = ""  # the setting the default period comes from
    # The shortest period a rule naming the class may have (services refuse shorter).
    minimum_days: int = 1

    @property
    def default_rule(self) -> str:
        return self.slug


OWN_CLASSES: tuple[OwnClass, ...] = (
    # Append-only evidence: its entries are redacted (the trail's one door), never deleted.
    OwnClass("steward-audit-trail", "Steward's audit trail", "restricted", actions=(REDACT,)),
    OwnClass("steward-assets", "Steward's decided assets", "confidential"),
    OwnClass("steward-callback-receipts", "Steward's workflow callback receipts", "internal"),
    OwnClass(
        "steward-event-receipts",
        "Steward's handled-event receipts (the inbox)",
        "internal",
        default_days=_inbox_window_days,
        setting="STEWARD_INBOX_RETENTION_HOURS",
        minimum_days=INBOX_MINIMUM_DAYS,
    ),
    # The dispatched log (apps.eventing.redrive): kept as long as the inbox remembers,
    # because only events still in the inbox can be re-driven without a second handling.
    OwnClass(
        "steward-dispatched-events",
        "Steward's dispatched events (the re-drive log)",
        "confidential",
        default_days=_inbox_window_days,
        setting="STEWARD_INBOX_RETENTION_HOURS",
    ),
    OwnClass(
        "steward-dead-letters",
        "Steward's resolved dead letters",
        "confidential",
        default_days=lambda: settings.STEWARD_RETENTION_DEAD_LETTERS_DAYS,
        setting="STEWARD_RETENTION_DEAD_LETTERS_DAYS",
    ),
    OwnClass("steward-uncertain-effects", "Steward's settled uncertain effects", "internal"),
    OwnClass(
        "steward-export-archives",
        "Steward's export archives",
        "restricted",
        default_days=lambda: _hours_as_days(settings.STEWARD_EXPORT_TTL_HOURS),
        setting="STEWARD_EXPORT_TTL_HOURS",
    ),
    OwnClass(
        "steward-idempotency-answers",
        "Steward's stored Idempotency-Key answers",
        "confidential",
        default_days=lambda: _hours_as_days(
            settings.STEWARD_IDEMPOTENCY_TTL.total_seconds() / 3600
        ),
        setting="STEWARD_IDEMPOTENCY_TTL_HOURS",
    ),
)
OWN_CLASS = {c.slug: c for c in OWN_CLASSES}


@functools.cache
def open_work() -> dict[str, str]:
    """Model label -> the SQL naming its rows that are open work, as each app declares
    them (`OPEN_WORK` in its governed.py, beside GOVERNED)."""
    found: dict[str, str] = {}
    for module in app_modules("governed"):
        found.update(getattr(module, "OPEN_WORK", {}))
    return found


@dataclass(frozen=True)
class OwnTable:
    data_class: str  # the OwnClass slug whose rules decide it
    model: str  # app_label.Model
    time_field: str
    condition: str = ""  # more SQL the expired rows meet
    # Rows other tables reference through Django's cascades (object permissions):
    # deleted through the ORM, which removes those first.
    cascade: bool = False

    @property
    def label(self) -> str:
        return self.model

    @property
    def expiring(self) -> str:
        """The SQL the rows a rule may expire meet: the table's condition, and not open
        work (however old, a row someone still needs stays)."""
        parts = [f"({self.condition})"] if self.condition else []
        if self.model in open_work():
            parts.append(f"NOT ({open_work()[self.model]})")
        return " AND ".join(parts)

    @property
    def tenant_owned(self) -> bool:
        return bulk.tenant_owned(apps.get_model(self.model))


# Dispatched outbox rows leave the outbox in the transaction that records them
# published, for the dispatched log, which the sweep expires. Open work (pending or
# unresolved callbacks, dead letters awaiting a decision, unsettled effects, assets still
# in play) never expires: the conditions below and each app's OPEN_WORK keep it.
OWN_TABLES: tuple[OwnTable, ...] = (
    OwnTable("steward-audit-trail", "tenancy.AuditEvent", "occurred_at", "redacted_at IS NULL"),
    OwnTable(
        "steward-assets",
        "assets.Asset",
        "updated_at",
        "status IN ('rejected', 'retired')",
        cascade=True,
    ),
    # Which receipts are open work is the assets app's to say (its OPEN_WORK).
    OwnTable("steward-callback-receipts", "assets.WorkflowCallback", "received_at"),
    OwnTable("steward-dispatched-events", "eventing.DispatchedEvent", "dispatched_at"),
    OwnTable("steward-event-receipts", "eventing.InboxEntry", "handled_at"),
    OwnTable("steward-event-receipts", "eventing.RecentEvent", "received_at"),
    OwnTable(
        "steward-dead-letters",
        "eventing.DeadLetter",
        "resolved_at",
        "state IN ('replayed', 'discarded')",
    ),
    OwnTable(
        "steward-uncertain-effects",
        "eventing.UncertainEffect",
        "updated_at",
        "state IN ('succeeded', 'failed')",
    ),
    OwnTable(
        "steward-export-archives", "governance.ExportArtifact", "created_at", "deleted_at IS NULL"
    ),
    # Bundles an order left behind; an archive's chunks go with its record, above.
    OwnTable(
        "steward-export-archives",
        "governance.ExportChunk",
        "created_at",
        f"starts_with(key, '{archive_store.BUNDLES}')",
    ),
    OwnTable("steward-idempotency-answers", "core.IdempotencyRecord", "created_at"),
)
EXPORTS = "governance.ExportArtifact"


@dataclass
class TableResult:
    data_class: str
    rule: str | None  # the rule that decided; None: no rule, the rows are kept
    action: str | None
    cutoff: str | None
    rows: int = 0
    batches: int = 0
    max_lock_ms: float = 0.0
    longest_batch_rows: int = 0
    held_tenants: int = 0
    files_removed: int = 0
    lookup_ms: float = 0.0  # finding the tenants with expired rows
    duration_ms: float = 0.0

    def add_batch(self, rows: int, elapsed_ms: float) -> None:
        self.rows += rows
        self.batches += 1
        if elapsed_ms > self.max_lock_ms:
            self.max_lock_ms, self.longest_batch_rows = elapsed_ms, rows

    def as_dict(self) -> dict:
        return {
            "data_class": self.data_class,
            "rule": self.rule,
            "action": self.action,
            "cutoff": self.cutoff,
            "rows": self.rows,
            "batches": self.batches,
            "max_lock_ms": round(self.max_lock_ms, 1),
            "longest_batch_rows": self.longest_batch_rows,
            "held_tenants": self.held_tenants,
            "files_removed": self.files_removed,
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
    condition = f" AND ({table.expiring})" if table.expiring else ""
    return db_table, column, condition


def _owners(table: OwnTable, cutoff: datetime, held: frozenset) -> tuple[list, int]:
    """The tenants (None: platform rows) that have expired rows, and how many of them
    a hold keeps."""
    owners = bulk.owners_with_rows_before(
        apps.get_model(table.model), table.time_field, cutoff, table.expiring
    )
    kept = [owner for owner in owners if owner is not None and str(owner) in held]
    return [owner for owner in owners if owner not in kept], len(kept)


def _delete_batch(table: OwnTable, owner, cutoff: datetime, size: int) -> tuple[int, int]:
    """One batch of `owner`'s expired rows gone: (rows, files removed)."""
    model = apps.get_model(table.model)
    if table.label == EXPORTS:
        return _export_batch(owner, cutoff, size)
    if table.cascade:
        # Claimed as the raw batches claim (SKIP LOCKED), deleted with Django's cascades.
        db_table, column, condition = _sql(table)
        with owner_scope(owner), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f'SELECT id FROM {db_table} WHERE "{column}" < %s AND tenant_id = %s'  # noqa: S608 - names only
                f"{condition} LIMIT {int(size)} FOR UPDATE SKIP LOCKED",
                [cutoff, owner],
            )
            pks = [row[0] for row in cursor.fetchall()]
            model.objects.filter(pk__in=pks).delete()
            return len(pks), 0
    deleted = bulk.delete_batch(
        model, table.time_field, cutoff, owner=owner, size=size, condition=table.expiring
    )
    return deleted, 0


def _export_batch(owner, cutoff: datetime, size: int) -> tuple[int, int]:
    """Expired export archives: the bytes are removed from the export store and the row
    marked deleted (it stays as the record of the export)."""
    table = ExportArtifact._meta.db_table
    now = timezone.now()
    with owner_scope(owner), connection.cursor() as cursor:
        cursor.execute(
            f"WITH batch AS MATERIALIZED ("  # noqa: S608 - names only
            f" SELECT id FROM {table} WHERE created_at < %s AND deleted_at IS NULL"
            f" AND tenant_id = %s LIMIT {int(size)} FOR UPDATE SKIP LOCKED)"
            f" UPDATE {table} SET deleted_at = %s"
            " WHERE id = ANY(ARRAY(SELECT id FROM batch)) RETURNING path",
            [cutoff, owner, now],
        )
        paths = [row[0] for row in cursor.fetchall()]
        return len(paths), archive_store.delete_files(paths)


def _batch(table: OwnTable, action: str, owner, cutoff: datetime, size: int) -> tuple[int, int]:
    if action == REDACT:
        return redact_audit_before(owner, cutoff, size=size), 0
    return _delete_batch(table, owner, cutoff, size)


def sweep_table(table: OwnTable, *, decision: OwnDecision, batching: Batching) -> TableResult:
    """The table's expired rows, as `decision` says: none when no rule decides it, or
    when the rule asks what the table's class cannot do (services refuse such a rule)."""
    began = time.perf_counter()
    rule = decision.rule
    result = TableResult(
        data_class=table.data_class,
        rule=rule.name if rule else None,
        action=rule.action if rule else None,
        cutoff=decision.cutoff.isoformat() if decision.cutoff else None,
    )
    if rule is None or rule.action not in OWN_CLASS[table.data_class].actions:
        return result
    held = decision.held_tenants if table.tenant_owned else frozenset()
    owners, result.held_tenants = _owners(table, decision.cutoff, held)
    result.lookup_ms = (time.perf_counter() - began) * 1000
    for owner in owners:
        while True:
            size = batching.size
            started = time.perf_counter()
            # Its own transaction (commit included in the timing): the lock time.
            rows, files = _batch(table, rule.action, owner, decision.cutoff, size)
            elapsed_ms = (time.perf_counter() - started) * 1000
            batching.after(elapsed_ms, rows)
            result.add_batch(rows, elapsed_ms)
            result.files_removed += files
            if rows < size:
                break
    result.duration_ms = (time.perf_counter() - began) * 1000
    return result


def expired_counts(table: OwnTable, decision: OwnDecision) -> int:
    """How many of the table's rows a sweep under `decision` would expire (the preview)."""
    if decision.rule is None or decision.rule.action not in OWN_CLASS[table.data_class].actions:
        return 0
    db_table, column, condition = _sql(table)
    held, params = "", [decision.cutoff]
    if table.tenant_owned and decision.held_tenants:
        held = " AND (tenant_id IS NULL OR NOT (tenant_id::text = ANY(%s)))"
        params.append(sorted(decision.held_tenants))
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f'SELECT count(*) FROM {db_table} WHERE "{column}" < %s{condition}{held}',  # noqa: S608
            params,
        )
        return cursor.fetchone()[0]


def sweep_own_tables(decisions: dict[str, OwnDecision]) -> dict:
    """Sweep every table in OWN_TABLES as its class's decision says; {table label:
    TableResult.as_dict()}. Each table adapts its own batch size: rows cost differently
    from table to table."""
    return {
        table.label: sweep_table(
            table, decision=decisions[table.data_class], batching=new_batching()
        ).as_dict()
        for table in OWN_TABLES
    }


def new_batching() -> Batching:
    return Batching(
        size=settings.STEWARD_RETENTION_SWEEP_BATCH,
        target_ms=settings.STEWARD_RETENTION_BATCH_TARGET_MS,
        largest=settings.STEWARD_RETENTION_SWEEP_BATCH_MAX,
    )
