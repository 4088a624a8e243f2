"""The governance tests' factories, and the small steps tests take with them: orders
approved by others, owners answering their tasks, stores and live bindings, rows for
the sweeper."""

import io
import uuid
import zipfile
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from apps.core.context import Actor
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, InboxEntry
from apps.governance.models import (
    ExportArtifact,
    GovernanceOrder,
    GovernanceTask,
    OrderApproval,
)
from apps.governance.orders import archive_store, services
from apps.governance.steward_owner import services as steward_owner
from apps.registry.models import Service, Subscription, Topic
from apps.stores.models import Store, StoreBinding
from apps.tenancy.models import ServiceAccount
from tests.factories import member


def stored_archive(order) -> zipfile.ZipFile:
    """The order's archive as the export store holds it."""
    with system_scope():
        artifact = ExportArtifact.objects.get(order_id=order.pk)
    data = b"".join(archive_store.chunks(tenant_id=artifact.tenant_id, key=artifact.path))
    assert len(data) == artifact.size
    return zipfile.ZipFile(io.BytesIO(data))


def export_row(tenant, status: str = "running", requester=None) -> GovernanceOrder:
    """An export order's row in `status`, written as it stands (no services)."""
    with tenant_scope(tenant):
        return GovernanceOrder.objects.create(
            tenant=tenant,
            kind=GovernanceOrder.Kind.EXPORT,
            reason="asked",
            requested_by=requester or member(tenant, role="admin"),
            approvals_needed=1,
            status=status,
        )


def store_file(order, key: str, data: bytes, piece: int = 7_000) -> archive_store.FileWriter:
    """`data` written to the export store under `key`, `piece` bytes a write."""
    with tenant_scope(order.tenant_id):
        with archive_store.FileWriter(tenant_id=order.tenant_id, order_id=order.pk, key=key) as out:
            for start in range(0, len(data), piece):
                out.write(data[start : start + piece])
    return out


OWNED = [
    ("search", "search-index", Store.Category.DERIVED),
    ("orders", "orders-sql", Store.Category.AUTHORITATIVE),
    ("audit-log", "audit-archive", Store.Category.AUDIT),
]


def approved(tenant, kind="deletion"):
    """An order requested by one admin and approved by another (non-production)."""
    requester = Actor(
        user=member(tenant, role="admin", username=f"req-{kind}", email="req@example.com")
    )
    order = services.order_request(actor=requester, tenant=tenant, kind=kind, reason="offboarding")
    approver = Actor(user=member(tenant, role="admin", username=f"appr-{kind}"))
    return services.order_decide(actor=approver, order=order, approve=True)


def open_tasks(order, phase=None):
    with system_scope():
        tasks = GovernanceTask.objects.filter(order=order).order_by("owner")
        if phase is not None:
            tasks = tasks.filter(phase=phase)
        return list(tasks)


def owner(name):
    """The owning service's own voice: a service account of its name."""
    with system_scope():
        account = ServiceAccount.objects.get_or_create(name=name)[0]
    return Actor(service_account=account)


def complete(task, items=None):
    if task.owner == "steward":
        assert steward_owner.owner_task_run(task_id=task.pk) == "completed"
        return
    items = items or [{"what": task.detail.get("store", ""), "action": "deleted", "count": 3}]
    services.owner_task_complete(
        actor=owner(task.owner), task_id=task.pk, receipt={"items": items, "digest": "ab" * 32}
    )


def fresh(obj):
    with system_scope():
        obj.refresh_from_db()
    return obj


def make_store(slug, data_class, owner="knowledge"):
    return Store.objects.create(
        slug=slug,
        name=slug,
        owning_service=Service.objects.get_or_create(name=owner)[0],
        data_class=data_class,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )


def live_binding(tenant, store, profile, *, status="active"):
    """A tenant's binding as provisioning leaves it (the path there is the stores tests')."""
    with tenant_scope(tenant):
        return StoreBinding.objects.create(
            tenant=tenant, store=store, profile=profile, region=tenant.home_region, status=status
        )


def admin_actor(tenant, username):
    return Actor(user=member(tenant, username=username, role="admin"))


def request_deletion(tenant, who):
    return services.order_request(
        actor=who, tenant=tenant, kind="deletion", reason="the customer left"
    )


NIGHT = datetime(2026, 11, 30, 2, 30, tzinfo=UTC)


def inbox(tenant, hours_old, n=1):
    with tenant_scope(tenant):
        InboxEntry.objects.bulk_create(
            InboxEntry(
                consumer="c",
                event_id=uuid.uuid4(),
                tenant=tenant,
                handled_at=NIGHT - timedelta(hours=hours_old),
            )
            for _ in range(n)
        )


def dead_letter(tenant, state, resolved_days_ago):
    topic, _ = Topic.objects.get_or_create(name="retention.test", current_schema_version=1)
    subscription, _ = Subscription.objects.get_or_create(
        consumer=Service.objects.get_or_create(name="sink")[0], topic=topic
    )
    resolved = NIGHT - timedelta(days=resolved_days_ago) if resolved_days_ago is not None else None
    with tenant_scope(tenant):
        return DeadLetter.objects.create(
            subscription=subscription,
            event_id=uuid.uuid4(),
            topic=topic.name,
            event_type="X",
            tenant=tenant,
            envelope={},
            error="boom",
            attempts=8,
            state=state,
            created_at=NIGHT - timedelta(days=60),
            resolved_at=resolved,
        )


def running_exports(tenant, requester, approver, n):
    """`n` running export orders of the tenant, each with an approval, an owner task and
    an archive: every related row a list of orders shows."""
    with tenant_scope(tenant):
        for _ in range(n):
            order = GovernanceOrder.objects.create(
                tenant=tenant,
                kind=GovernanceOrder.Kind.EXPORT,
                status=GovernanceOrder.Status.RUNNING,
                reason="asked",
                requested_by=requester,
                approvals_needed=1,
                phase=1,
            )
            OrderApproval.objects.create(
                order=order, tenant=tenant, approver=approver, approve=True
            )
            GovernanceTask.objects.create(
                tenant=tenant,
                order=order,
                phase=1,
                kind=GovernanceTask.Kind.EXPORT,
                owner="search",
                due_at=timezone.now() + timedelta(days=1),
            )
            ExportArtifact.objects.create(
                tenant=tenant,
                order=order,
                path=f"archives/{order.pk}.zip",
                size=1,
                sha256="0" * 64,
                expires_at=timezone.now() + timedelta(days=1),
            )
