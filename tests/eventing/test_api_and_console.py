"""The eventing API and console pages for operators, and dead-letter replay."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumers import dead_letter, redeliver
from apps.eventing.envelope import Envelope
from apps.eventing.models import DeadLetter
from apps.registry.models import Subscription
from tests.conftest import bearer
from tests.eventing.conftest import subscribe
from tests.factories import service_token
from tests.support import LocalServer, run_concurrently

pytestmark = pytest.mark.django_db


def make_dead_letter(tenant, topic, subscription, n=0):
    with tenant_scope(tenant):
        [envelope] = emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="k",
                    aggregate_id="1",
                    payload={"n": n},
                    tenant=tenant,
                )
            ]
        )
    dead_letter(subscription, envelope, error="HTTP 500", attempts=8)
    with system_scope():
        return DeadLetter.objects.get(event_id=envelope.event_id)


@pytest.fixture
def webhook_subscription(topic, monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_HOOK", "s3cret")
    return subscribe(
        topic,
        "receiver",
        transport=Subscription.Transport.WEBHOOK,
        endpoint="http://127.0.0.1:9/unused",
        secret_ref="env:STEWARD_WEBHOOK_SECRET_HOOK",
    )


def test_the_overview_is_for_operators_and_platform_services(
    api, operator, admin_a, tenant_a, topic
):
    with tenant_scope(tenant_a):
        emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="k",
                    aggregate_id="1",
                    payload={},
                    tenant=tenant_a,
                )
            ]
        )
    api.force_login(operator)
    body = api.get("/api/v1/eventing/overview/").json()
    assert body["backlog"] == 1 and body["oldest_age_seconds"] >= 0
    assert len(body["per_minute"]) == 60
    dispatcher.drain()
    body = api.get("/api/v1/eventing/overview/").json()
    assert body["backlog"] == 0 and body["delivered_last_hour"] == 1
    api.force_login(admin_a)
    assert api.get("/api/v1/eventing/overview/").status_code == 403
    platform = service_token(scopes=["eventing:read"])
    assert bearer(APIClient(), platform).get("/api/v1/eventing/overview/").status_code == 200


def test_a_dead_letter_is_replayed_once(api, operator, tenant_a, topic, webhook_subscription):
    dead = make_dead_letter(tenant_a, topic, webhook_subscription)
    api.force_login(operator)
    url = f"/api/v1/eventing/dead-letters/{dead.pk}/replay/"
    first = api.post(url)
    assert first.status_code == 200 and first.json()["state"] == "replaying"
    second = api.post(url)
    assert second.status_code == 409 and second.json()["code"] == "dead_letter_resolved"
    assert api.post(f"/api/v1/eventing/dead-letters/{dead.pk}/discard/").status_code == 409


@pytest.mark.django_db(transaction=True)
def test_concurrent_replays_of_one_dead_letter_queue_one_delivery(
    operator, tenant_a, topic, webhook_subscription
):
    from django.test import Client

    dead = make_dead_letter(tenant_a, topic, webhook_subscription)

    def replay():
        client = Client()
        client.force_login(operator)
        return client.post(f"/api/v1/eventing/dead-letters/{dead.pk}/replay/").status_code

    statuses, errors = run_concurrently(replay, 4)
    assert errors == []
    assert sorted(statuses) == [200, 409, 409, 409]


def test_replay_delivers_to_that_subscription_and_a_new_failure_is_a_new_dead_letter(
    tenant_a, topic, webhook_subscription
):
    from apps.eventing.services import dead_letter_replay

    answers = iter([500, 200])
    with LocalServer(respond=lambda r: (next(answers), {})) as server:
        Subscription.objects.filter(pk=webhook_subscription.pk).update(endpoint=server.url)
        dead = make_dead_letter(tenant_a, topic, webhook_subscription)
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=dead)
        assert redeliver(dead.pk) == "failed"
        assert redeliver(dead.pk) == "skipped"  # a replay is delivered once
        with system_scope():
            again = DeadLetter.objects.get(state="dead")
            assert DeadLetter.objects.get(pk=dead.pk).state == "replayed"
        assert again.event_id == dead.event_id and again.pk != dead.pk
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=again)
        assert redeliver(again.pk) == "delivered"
    assert [r.headers["webhook-id"] for r in server.received] == [str(dead.event_id)] * 2
    assert Envelope.from_json(server.received[1].body).event_id == dead.event_id


def test_creating_a_webhook_subscription_checks_its_secret_reference(
    api, operator, topic, monkeypatch
):
    api.force_login(operator)
    body = {
        "consumer": "billing",
        "topic": topic.name,
        "transport": "webhook",
        "endpoint": "https://billing.example/hooks",
        "secret_ref": "env:STEWARD_WEBHOOK_SECRET_BILLING",
    }
    api.post("/api/v1/registry/services/", {"name": "billing"})
    refused = api.post("/api/v1/registry/subscriptions/", body)
    assert refused.status_code == 400 and refused.json()["code"] == "secret_unavailable"
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_BILLING", "x")
    created = api.post("/api/v1/registry/subscriptions/", body)
    assert created.status_code == 201, created.content
    subscription = Subscription.objects.get(pk=created.json()["id"])
    etag = api.get(f"/api/v1/registry/subscriptions/{subscription.pk}/")["ETag"]
    off = api.patch(
        f"/api/v1/registry/subscriptions/{subscription.pk}/",
        {"is_active": False},
        HTTP_IF_MATCH=etag,
    )
    assert off.status_code == 200, off.content
    assert off.json()["is_active"] is False and off.json()["consumer"] == "billing"
    assert off["ETag"] == api.get(f"/api/v1/registry/subscriptions/{subscription.pk}/")["ETag"]
    stale = api.patch(
        f"/api/v1/registry/subscriptions/{subscription.pk}/",
        {"is_active": True},
        HTTP_IF_MATCH=etag,
    )
    assert stale.status_code == 412


@pytest.mark.django_db(transaction=True)
def test_a_new_subscription_gets_its_consumer_group(operator, topic, monkeypatch):
    from django.test import Client

    client = Client()
    client.force_login(operator)
    client.post("/api/v1/registry/services/", {"name": "search"}, content_type="application/json")
    response = client.post(
        "/api/v1/registry/subscriptions/",
        {"consumer": "search", "topic": topic.name, "transport": "redis_stream"},
        content_type="application/json",
    )
    assert response.status_code == 201
    groups = get_redis().xinfo_groups(f"steward:stream:{topic.name}")
    assert [g["name"] for g in groups] == [b"search"]


def test_the_eventing_page_shows_backlog_chart_and_failures(
    client, operator, tenant_a, topic, webhook_subscription
):
    make_dead_letter(tenant_a, topic, webhook_subscription)
    Subscription.objects.filter(pk=webhook_subscription.pk).update(
        consecutive_failures=3, last_error="HTTP 500"
    )
    client.force_login(operator)
    page = client.get(reverse("eventing:overview"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "<svg" in html and html.count("<rect") >= 60
    assert "HTTP 500" in html
    listing = client.get(reverse("eventing:dead-letter-list"), {"state": "dead"})
    assert "Replay" in listing.content.decode()


def test_eventing_pages_are_for_operators(client, admin_a):
    client.force_login(admin_a)
    for name in (
        "eventing:overview",
        "eventing:dead-letter-list",
        "eventing:effect-list",
        "eventing:recent-list",
        "registry:subscription-list",
    ):
        assert client.get(reverse(name)).status_code == 403, name
    assert client.get(reverse("registry:topic-list")).status_code == 200


def test_replay_and_discard_from_the_console(
    client, operator, tenant_a, topic, webhook_subscription
):
    first = make_dead_letter(tenant_a, topic, webhook_subscription, n=1)
    second = make_dead_letter(tenant_a, topic, webhook_subscription, n=2)
    client.force_login(operator)
    client.post(reverse("eventing:dead-letter-replay", args=[first.pk]))
    client.post(reverse("eventing:dead-letter-discard", args=[second.pk]))
    with system_scope():
        states = dict(DeadLetter.objects.values_list("pk", "state"))
    assert states == {first.pk: "replaying", second.pk: "discarded"}


@pytest.mark.parametrize(
    "url_name",
    [
        "eventing:dead-letter-list",
        "eventing:effect-list",
        "eventing:recent-list",
        "registry:topic-list",
        "registry:subscription-list",
    ],
)
def test_eventing_list_pages_query_count_does_not_grow(
    client, operator, tenant_a, topic, webhook_subscription, url_name
):
    from tests.console.test_views import list_page_queries

    client.force_login(operator)

    def add(n):
        from apps.eventing.effects import perform_effect
        from apps.eventing.models import RecentEvent
        from apps.registry.services import service_ensure, topic_create

        for i in range(n):
            dead = make_dead_letter(tenant_a, topic, webhook_subscription, n=i)
            with tenant_scope(tenant_a):
                RecentEvent.objects.create(
                    event_id=dead.event_id,
                    topic=topic.name,
                    event_type="e",
                    tenant=tenant_a,
                    aggregate_type="k",
                    aggregate_id=str(i),
                    occurred_at=dead.created_at,
                )
            perform_effect(
                tenant_id=tenant_a.pk,
                actor="t",
                target_system="x",
                operation="y",
                external_ref=str(dead.event_id),
                call=lambda: {},
            )
            producer = service_ensure(actor=SYSTEM_ACTOR, name=f"producer-{dead.pk}")
            extra = topic_create(
                actor=SYSTEM_ACTOR, name=f"test.extra{dead.pk}", producers=[producer]
            )
            subscribe(extra, f"consumer-{dead.pk}")

    add(2)
    few = list_page_queries(client, reverse(url_name))
    add(6)
    assert list_page_queries(client, reverse(url_name)) == few


def test_a_replay_whose_task_was_lost_is_delivered_by_the_sweep(
    tenant_a, topic, webhook_subscription
):
    from datetime import timedelta

    from django.utils import timezone

    from apps.eventing.consumers import redeliver_queued
    from apps.eventing.services import dead_letter_replay

    with LocalServer() as server:
        Subscription.objects.filter(pk=webhook_subscription.pk).update(endpoint=server.url)
        dead = make_dead_letter(tenant_a, topic, webhook_subscription)
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=dead)  # its task never runs here
        assert redeliver_queued() == 0  # too recent: its task may still be on the way
        with tenant_scope(tenant_a):
            DeadLetter.objects.filter(pk=dead.pk).update(
                resolved_at=timezone.now() - timedelta(minutes=1)
            )
        assert redeliver_queued() == 1
    assert [r.headers["webhook-id"] for r in server.received] == [str(dead.event_id)]
    with system_scope():
        assert DeadLetter.objects.get(pk=dead.pk).state == "replayed"


def test_subscriptions_are_not_for_tenants_to_read(api, admin_a, topic, webhook_subscription):
    api.force_login(admin_a)
    assert api.get("/api/v1/registry/subscriptions/").status_code == 403
    assert api.get("/api/v1/registry/topics/").status_code == 200


def test_an_operator_acting_for_a_tenant_still_uses_the_platform_pages(
    client, api, operator, tenant_a, region, topic
):
    from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY

    client.force_login(operator)
    session = client.session
    session[ACTING_TENANT_SESSION_KEY] = str(tenant_a.pk)
    session.save()
    assert client.get(reverse("eventing:overview")).status_code == 200
    created = client.post(
        reverse("console:tenant-create"),
        {
            "slug": "lima",
            "name": "Lima",
            "home_region": region.slug,
            "environment_class": "production",
        },
    )
    assert created.status_code == 302
    api.force_login(operator)
    api_session = api.session
    api_session[ACTING_TENANT_SESSION_KEY] = str(tenant_a.pk)
    api_session.save()
    response = api.post(
        "/api/v1/tenancy/tenants/",
        {"slug": "mike", "name": "Mike", "home_region": region.slug},
    )
    assert response.status_code == 201, response.content
    assert api.post("/api/v1/registry/services/", {"name": "nova"}).status_code == 201


def test_a_secret_reference_cannot_name_stewards_own_secrets(api, operator, topic):
    api.force_login(operator)
    api.post("/api/v1/registry/services/", {"name": "curious"})
    response = api.post(
        "/api/v1/registry/subscriptions/",
        {
            "consumer": "curious",
            "topic": topic.name,
            "transport": "webhook",
            "endpoint": "https://curious.example/hook",
            "secret_ref": "env:STEWARD_SECRET_KEY",
        },
    )
    assert response.status_code == 400 and response.json()["code"] == "secret_unavailable"
    assert "STEWARD_WEBHOOK_SECRET_" in response.json()["detail"]


def test_a_webhook_whose_secret_is_gone_can_still_be_deactivated(
    api, operator, webhook_subscription, monkeypatch
):
    monkeypatch.delenv("STEWARD_WEBHOOK_SECRET_HOOK")
    api.force_login(operator)
    response = api.patch(
        f"/api/v1/registry/subscriptions/{webhook_subscription.pk}/", {"is_active": False}
    )
    assert response.status_code == 200 and response.json()["is_active"] is False
