"""Rows for every chart on the dashboard (apps/*/charts.py), shared by the dashboard's
view test and the browser journey that photographs it."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from apps.assets.models import Asset
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, DeliveryCount, OutboxEvent, RecentEvent
from apps.eventing.transports import stream_key
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.stores.models import StoreBinding
from tests.factories import member
from tests.governance.factories import dead_letter, live_binding, make_store, running_exports


def add_assets(tenant, ages_hours: list[float]):
    now = timezone.now()
    with tenant_scope(tenant):
        for hours in ages_hours:
            asset = Asset.objects.create(tenant=tenant, name=f"a-{uuid.uuid4().hex[:8]}")
            Asset.objects.filter(pk=asset.pk).update(
                status=Asset.Status.REQUESTED, updated_at=now - timedelta(hours=hours)
            )


def add_recent_events(tenant, topic, n, *, minutes_ago=0):
    with tenant_scope(tenant):
        RecentEvent.objects.bulk_create(
            RecentEvent(
                event_id=uuid.uuid4(),
                topic=topic.name,
                event_type="e",
                tenant=tenant,
                aggregate_type="k",
                aggregate_id=str(i),
                occurred_at=timezone.now(),
                received_at=timezone.now() - timedelta(minutes=minutes_ago),
            )
            for i in range(n)
        )


def add_outbox(tenant, topic, n):
    with tenant_scope(tenant):
        OutboxEvent.objects.bulk_create(
            OutboxEvent(
                topic=topic.name,
                event_type="e",
                schema_version=1,
                tenant=tenant,
                aggregate_type="k",
                aggregate_id=str(i),
                lane=0,
                correlation_id="c",
                payload={},
            )
            for i in range(n)
        )


def add_dead_letters(tenant, n):
    for _ in range(n):
        dead_letter(tenant, DeadLetter.State.DEAD, None)


def seed_every_chart(*, tenant_a, tenant_b, topic, store, profile, operator):
    """A little of everything each dashboard chart draws, in two tenants; the topic's
    stream has a consumer group with 3 entries unread and 2 read, not acknowledged."""
    now = timezone.now().replace(second=0, microsecond=0)
    with system_scope():
        DeliveryCount.objects.create(minute=now - timedelta(minutes=3), delivered=7, failed=2)
        DeliveryCount.objects.create(minute=now, delivered=4)
    add_recent_events(tenant_a, topic, 3, minutes_ago=2)
    add_recent_events(tenant_b, topic, 5)
    add_outbox(tenant_a, topic, 2)
    add_outbox(tenant_b, topic, 4)
    add_dead_letters(tenant_a, 3)
    add_assets(tenant_a, [0.1, 0.2, 5, 30])
    add_assets(tenant_b, [200])
    live_binding(tenant_a, store, profile, status="active")
    live_binding(tenant_b, store, profile, status="requested")
    with tenant_scope(tenant_b):
        flagged = StoreBinding.objects.create(
            tenant=tenant_b,
            store=make_store("other-sql", store.data_class),
            profile=profile,
            region=tenant_b.home_region,
            status="provisioned",
        )
        StoreBinding.objects.filter(pk=flagged.pk).update(violation="moved")
    running_exports(tenant_a, member(tenant_a, username="req"), operator, 2)
    with tenant_scope(tenant_a):
        first = GovernanceOrder.objects.order_by("created_at").first()
        GovernanceTask.objects.filter(order=first).update(status=GovernanceTask.Status.COMPLETED)
    client = get_redis()
    key = stream_key(topic.name)
    for i in range(5):
        client.xadd(key, {"n": i})
    client.xgroup_create(key, "reader", id="0")
    client.xreadgroup("reader", "r-1", {key: ">"}, count=2)  # 2 read, not acknowledged
