"""What the chaos drill checks at the end: nothing lost, nothing applied twice.

The outbox forgets an event once it is dispatched, so the drill first installs a
trigger that copies every outbox row into `chaos_emitted_event` as it is written
(`install_emitted_log`). That log is the ground truth: every event Steward committed,
against which the consumers' inbox, the webhook receiver and each domain's effects are
counted. `verify` reads only the database and what the drill's own stand-ins saw, so a
test can hand it a database state with a hole in it and watch it fail.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import connection

from apps.assets.models import Asset, WorkflowCallback
from apps.compute.models import WorkflowBatchLink
from apps.core.scope import system_scope
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.models import DeadLetter, InboxEntry, OutboxEvent
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.registry.models import SchemaVersion, Service, Subscription, Topic
from apps.stores.models import StoreBinding, StoreBindingChange
from apps.tenancy.models import AuditEvent

EMITTED = "chaos_emitted_event"
OUTBOX = OutboxEvent._meta.db_table


def install_emitted_log() -> None:
    """Copy every outbox row, as it is inserted, into a log the drill reads at the end."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE TABLE IF NOT EXISTS {EMITTED} (
                event_id uuid PRIMARY KEY, topic text NOT NULL, event_type text NOT NULL,
                aggregate_id text NOT NULL, tenant_id uuid, payload jsonb NOT NULL,
                logged_at timestamptz NOT NULL DEFAULT clock_timestamp());
            CREATE OR REPLACE FUNCTION chaos_log_emitted() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO {EMITTED} (event_id, topic, event_type, aggregate_id, tenant_id,
                    payload)
                VALUES (NEW.event_id, NEW.topic, NEW.event_type, NEW.aggregate_id,
                    NEW.tenant_id, NEW.payload);
                RETURN NULL;
            END $$;
            DROP TRIGGER IF EXISTS chaos_log_emitted ON {OUTBOX};
            CREATE TRIGGER chaos_log_emitted AFTER INSERT ON {OUTBOX}
                FOR EACH ROW EXECUTE FUNCTION chaos_log_emitted();
            """  # noqa: S608 - table names only
        )


@dataclass
class Expected:
    """What the drill asked for, and what its stand-ins saw."""

    assets: dict[str, str] = field(default_factory=dict)  # asset id -> decision sent
    batches: set[str] = field(default_factory=set)
    bindings: set[str] = field(default_factory=set)
    schema_versions: dict[str, int] = field(default_factory=dict)  # topic -> versions
    orders: set[str] = field(default_factory=set)
    webhook_subscription: int | None = None
    webhook_topics: tuple[str, ...] = ()
    webhook_received: Counter = field(default_factory=Counter)  # event id -> deliveries


def _rows(sql: str, params=()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _once(counts: dict, keys) -> tuple[list, list]:
    """(keys seen never, keys seen more than once)."""
    lost = [k for k in keys if counts.get(k, 0) == 0]
    doubled = [k for k in keys if counts.get(k, 0) > 1]
    return lost, doubled


def _consumer_deliveries() -> dict:
    """Every logged event must be in the inbox of each Steward consumer subscribed to
    its topic, once (the inbox's unique key makes twice impossible; missing is not)."""
    sub, topic, svc = Subscription._meta.db_table, Topic._meta.db_table, Service._meta.db_table
    missing = _rows(
        f"""
        SELECT s.name, e.event_id::text, e.topic, e.event_type
        FROM {EMITTED} e
        JOIN {topic} t ON t.name = e.topic
        JOIN {sub} sb ON sb.topic_id = t.id AND sb.transport = 'redis_stream' AND sb.is_active
        JOIN {svc} s ON s.id = sb.consumer_id AND s.name = ANY(%s)
        LEFT JOIN {InboxEntry._meta.db_table} i
            ON i.consumer = s.name AND i.event_id = e.event_id
        WHERE i.id IS NULL
        ORDER BY e.logged_at
        """,  # noqa: S608 - table names only
        [list(HANDLERS)],
    )
    handled = _rows(f"SELECT count(*) FROM {InboxEntry._meta.db_table}")[0][0]  # noqa: S608
    return {
        "handled": handled,
        "lost": len(missing),
        "lost_examples": [list(row) for row in missing[:5]],
    }


def _webhook(expected: Expected) -> dict:
    if expected.webhook_subscription is None:
        return {"lost": 0, "received": 0}
    logged = [
        event_id
        for (event_id,) in _rows(
            f"SELECT event_id::text FROM {EMITTED} WHERE topic = ANY(%s)",  # noqa: S608
            [list(expected.webhook_topics)],
        )
    ]
    lost, _ = _once(expected.webhook_received, logged)
    return {
        "events": len(logged),
        "received": len(expected.webhook_received),
        # At least once: a retry after a lost answer is allowed, and deduplicated on
        # webhook-id by the receiver; counted to show the drill provoked some.
        "redelivered": sum(n - 1 for n in expected.webhook_received.values()),
        "lost": len(lost),
        "lost_examples": lost[:5],
    }


def _assets(expected: Expected) -> dict:
    ids = list(expected.assets)
    status = dict(Asset.objects.filter(pk__in=ids).values_list("id", "status"))
    status = {str(k): v for k, v in status.items()}
    wanted = {"approve": Asset.Status.APPROVED, "reject": Asset.Status.REJECTED}
    undecided = [a for a in ids if status.get(a) not in (Asset.Status.APPROVED, "rejected")]
    wrong = [a for a in ids if a not in undecided and status[a] != wanted.get(expected.assets[a])]
    events = Counter(
        aggregate
        for (aggregate,) in _rows(
            f"SELECT aggregate_id FROM {EMITTED}"  # noqa: S608
            " WHERE event_type IN ('AssetApproved', 'AssetRejected') AND aggregate_id = ANY(%s)",
            [ids],
        )
    )
    audits = Counter(
        AuditEvent.objects.filter(
            action__in=["asset.approved", "asset.rejected"], object_id__in=ids
        ).values_list("object_id", flat=True)
    )
    instances = dict(
        Asset.objects.filter(pk__in=ids, workflow_instance_id__isnull=False).values_list(
            "workflow_instance_id", "id"
        )
    )
    applied = Counter(
        str(instances[i])
        for i in WorkflowCallback.objects.filter(
            workflow_instance_id__in=list(instances), outcome=WorkflowCallback.Outcome.APPLIED
        ).values_list("workflow_instance_id", flat=True)
    )
    lost_events, double_events = _once(events, ids)
    _, double_audits = _once(audits, ids)
    _, double_applied = _once(applied, ids)
    return {
        "requested": len(ids),
        "decided": len(ids) - len(undecided),
        "callbacks": dict(
            Counter(WorkflowCallback.objects.values_list("outcome", flat=True)).most_common()
        ),
        "lost": len(set(undecided) | set(lost_events)),
        "wrong_decision": len(wrong),
        "doubled": len(set(double_events) | set(double_audits) | set(double_applied)),
        "lost_examples": (undecided + lost_events)[:5],
        "doubled_examples": (double_events + double_audits + double_applied)[:5],
    }


def _batches(expected: Expected) -> dict:
    ids = sorted(expected.batches)
    completed = Counter(
        batch
        for (batch,) in _rows(
            f"SELECT payload->>'batch_id' FROM {EMITTED}"  # noqa: S608
            " WHERE topic = 'compute.step' AND payload->>'batch_id' = ANY(%s)",
            [ids],
        )
    )
    left = WorkflowBatchLink.objects.filter(batch_id__in=ids).count()
    lost, doubled = _once(completed, ids)
    return {
        "batches": len(ids),
        "links_left": left,
        "lost": len(lost),
        "doubled": len(doubled),
        "lost_examples": lost[:5],
        "doubled_examples": doubled[:5],
    }


def _bindings(expected: Expected) -> dict:
    ids = sorted(expected.bindings)
    status = {
        str(k): v for k, v in StoreBinding.objects.filter(pk__in=ids).values_list("id", "status")
    }
    steps = Counter(
        (str(b), to)
        for b, to in StoreBindingChange.objects.filter(binding_id__in=ids).values_list(
            "binding_id", "to_status"
        )
    )
    announced = Counter(
        (aggregate, status_)
        for aggregate, status_ in _rows(
            f"SELECT aggregate_id, payload->>'status' FROM {EMITTED}"  # noqa: S608
            " WHERE event_type = 'StoreBindingChanged' AND aggregate_id = ANY(%s)",
            [ids],
        )
    )
    path = [StoreBinding.Status.REQUESTED, StoreBinding.Status.PROVISIONED, "active"]
    keys = [(b, s) for b in ids for s in path]
    lost_steps, double_steps = _once(steps, keys)
    lost_events, double_events = _once(announced, keys)
    not_active = [b for b in ids if status.get(b) != StoreBinding.Status.ACTIVE]
    return {
        "bindings": len(ids),
        "active": len(ids) - len(not_active),
        "lost": len(set(not_active) | {b for b, _ in lost_steps + lost_events}),
        "doubled": len({b for b, _ in double_steps + double_events}),
        "lost_examples": (not_active + [f"{b} {s}" for b, s in lost_steps + lost_events])[:5],
        "doubled_examples": [f"{b} {s}" for b, s in double_steps + double_events][:5],
    }


def _schemas(expected: Expected) -> dict:
    topics = sorted(expected.schema_versions)
    versions = Counter(
        SchemaVersion.objects.filter(
            topic__name__in=topics, state=SchemaVersion.State.PUBLISHED
        ).values_list("topic__name", flat=True)
    )
    announced = Counter(
        (topic, int(version))
        for topic, version in _rows(
            f"SELECT aggregate_id, payload->>'version' FROM {EMITTED}"  # noqa: S608
            " WHERE event_type = 'SchemaVersionPublished' AND aggregate_id = ANY(%s)",
            [topics],
        )
    )
    keys = [(t, v) for t in topics for v in range(1, expected.schema_versions[t] + 1)]
    lost, doubled = _once(announced, keys)
    short = [t for t in topics if versions[t] != expected.schema_versions[t]]
    return {
        "versions": sum(expected.schema_versions.values()),
        "published": sum(versions.values()),
        "lost": len(set(short) | {t for t, _ in lost}),
        "doubled": len(doubled),
        "lost_examples": (short + [f"{t} v{v}" for t, v in lost])[:5],
        "doubled_examples": [f"{t} v{v}" for t, v in doubled][:5],
    }


def _orders(expected: Expected) -> dict:
    ids = sorted(expected.orders)
    status = {
        str(k): v for k, v in GovernanceOrder.objects.filter(pk__in=ids).values_list("id", "status")
    }
    tasks = Counter(
        GovernanceTask.objects.filter(order_id__in=ids).values_list("status", flat=True)
    )
    finished = Counter(
        aggregate
        for (aggregate,) in _rows(
            f"SELECT aggregate_id FROM {EMITTED}"  # noqa: S608
            " WHERE event_type IN ('ExportCompleted', 'DeletionOrderCompleted')"
            " AND aggregate_id = ANY(%s)",
            [ids],
        )
    )
    incomplete = [o for o in ids if status.get(o) != GovernanceOrder.Status.COMPLETED]
    lost, doubled = _once(finished, ids)
    return {
        "orders": len(ids),
        "completed": len(ids) - len(incomplete),
        "tasks": dict(tasks),
        "lost": len(set(incomplete) | set(lost)),
        "doubled": len(doubled),
        "lost_examples": (incomplete + lost)[:5],
        "doubled_examples": doubled[:5],
    }


def verify(expected: Expected) -> dict:
    """Every check, with `lost` and `doubled` totals; `ok` only when both are 0 and
    nothing is left waiting in the outbox or dead letters."""
    with system_scope():
        checks = {
            "consumers": _consumer_deliveries(),
            "webhook": _webhook(expected),
            "assets": _assets(expected),
            "compute": _batches(expected),
            "stores": _bindings(expected),
            "registry": _schemas(expected),
            "governance": _orders(expected),
        }
        backlog = {
            "outbox_left": OutboxEvent.objects.count(),
            "dead_letters": DeadLetter.objects.count(),
            "pending_callbacks": WorkflowCallback.objects.filter(
                outcome=WorkflowCallback.Outcome.PENDING
            ).count(),
            "emitted": _rows(f"SELECT count(*) FROM {EMITTED}")[0][0],  # noqa: S608
        }
    lost = sum(check["lost"] for check in checks.values())
    doubled = sum(
        check.get("doubled", 0) + check.get("wrong_decision", 0) for check in checks.values()
    )
    ok = (
        lost == 0
        and doubled == 0
        and backlog["outbox_left"] == 0
        and backlog["dead_letters"] == 0
        and backlog["pending_callbacks"] == 0
    )
    return {"ok": ok, "lost": lost, "doubled": doubled, **backlog, "checks": checks}
