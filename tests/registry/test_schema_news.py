"""Schema news reaches each consumer (apps.registry.news): every consumer of a topic
gets its own copy of the topic's news (awaiting acknowledgement, reminders,
publication, withdrawal) through its own subscription, a consumer of another topic
gets none, the shared `registry.schema` topic keeps every announcement for observers,
and a consumer with no subscription to receive its news is listed as unreachable."""

from __future__ import annotations

import re
import uuid

import pytest
from celery.contrib.testing.worker import start_worker

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.core.scope import system_scope
from apps.core.setup import SetupReport
from apps.eventing import dispatcher
from apps.eventing.consumer_registry import Handler
from apps.eventing.consumers import build_runners, consumer_runner
from apps.eventing.envelope import Envelope
from apps.eventing.models import InboxEntry, OutboxEvent
from apps.eventing.services import ensure_subscription_groups
from apps.eventing.transports import RedisStreamTransport, stream_key, webhook_signature
from apps.registry import gauges, install, selectors, services
from apps.registry import versions as schemas
from apps.registry.models import SchemaVersion, Service, Subscription
from apps.registry.news import AWAITING, LOWERED, PUBLISHED, WITHDRAWN, news_topic
from portal.celery import app
from tests.eventing.factories import pump
from tests.registry.factories import V1, V2_BREAKING, sync
from tests.support import LocalServer, wait_for

SECRET = "whsec-news-5c1e"
UNREACHABLE_GAUGE = "steward_schema_news_unreachable_consumers"
# Breaking against v1 as V2_BREAKING is (a required property without a default), and
# not the same schema, so it is a version of its own after v2 is withdrawn.
V3_BREAKING = {**V2_BREAKING, "description": "orders, with their totals"}


@pytest.fixture
def names():
    """Names of this test's own, so the streams Redis keeps never mix between tests."""
    uid = uuid.uuid4().hex[:8]
    made = {
        "topic": f"orders.n{uid}",
        "other_topic": f"parcels.n{uid}",
        "billing": f"billing-{uid}",
        "ledger": f"ledger-{uid}",
        "shipping": f"shipping-{uid}",
        "uid": uid,
    }
    yield made
    client = get_redis()
    for key in ("topic", "other_topic"):
        client.delete(stream_key(made[key]))
    for key in ("billing", "ledger", "shipping"):
        client.delete(stream_key(news_topic(made[key])))


@pytest.fixture
def news_secret(monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_NEWS", SECRET)
    return "env:STEWARD_WEBHOOK_SECRET_NEWS"


def subscribe(consumer: str, topic: str, *, transport, endpoint="", secret_ref=""):
    return services.subscription_create(
        actor=SYSTEM_ACTOR,
        consumer=services.service_ensure(actor=SYSTEM_ACTOR, name=consumer),
        topic=selectors.topic_by_name(topic),
        transport=transport,
        endpoint=endpoint,
        secret_ref=secret_ref,
    )


def subscribe_webhook(consumer: str, topic: str, endpoint: str, secret_ref: str):
    return subscribe(
        consumer,
        topic,
        transport=Subscription.Transport.WEBHOOK,
        endpoint=endpoint,
        secret_ref=secret_ref,
    )


def waiting(topic: str) -> SchemaVersion:
    return SchemaVersion.objects.get(topic__name=topic, state=SchemaVersion.State.AWAITING)


def service(name: str) -> Service:
    return Service.objects.get(name=name)


def news_runner(consumer: str):
    """The runner `run_consumers` runs for the consumer's news webhook, from the catalog."""
    [runner] = [
        r
        for r in build_runners()
        if r.subscriptions[0].topic.name == news_topic(consumer)
        and r.subscriptions[0].transport == Subscription.Transport.WEBHOOK
    ]
    return runner


def received_news(server: LocalServer) -> list[Envelope]:
    return [Envelope.from_json(r.body) for r in server.received]


def summary(envelopes: list[Envelope]) -> list[tuple]:
    return [
        (e.event_type, e.payload["version"], bool(e.payload.get("reminder"))) for e in envelopes
    ]


def outbox_is_empty() -> bool:
    with system_scope():
        return not OutboxEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_each_consumer_receives_its_own_schema_news_through_its_own_subscription(
    names, news_secret, settings
):
    # given: billing reads orders through a webhook, ledger through a stream, shipping
    # reads only parcels (through a webhook); the dispatcher runs on a real worker
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "KICK_ON_COMMIT": True}
    topic, billing, ledger, shipping = (
        names["topic"],
        names["billing"],
        names["ledger"],
        names["shipping"],
    )
    release = names["uid"]
    parcels = {"name": names["other_topic"], "consumers": [shipping], "schema": V1}
    sync(f"{release}-1", V1, name=topic, consumers=(billing, ledger), extra=[parcels])
    with (
        LocalServer() as billing_hook,
        LocalServer() as shipping_hook,
        start_worker(
            app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
        ),
    ):
        subscribe_webhook(billing, topic, f"{billing_hook.url}/hooks/orders", news_secret)
        subscribe(ledger, topic, transport=Subscription.Transport.REDIS_STREAM)
        subscribe_webhook(
            shipping, names["other_topic"], f"{shipping_hook.url}/hooks/parcels", news_secret
        )

        # when: a breaking version waits, billing acknowledges, ledger is reminded, the
        # producer withdraws it; another breaking one waits and both acknowledge it
        sync(f"{release}-2", V2_BREAKING, name=topic, consumers=(billing, ledger))
        schemas.acknowledge(actor=SYSTEM_ACTOR, version=waiting(topic), consumer=service(billing))
        assert schemas.remind(actor=SYSTEM_ACTOR, version=waiting(topic)) == [ledger]
        schemas.withdraw_version(actor=SYSTEM_ACTOR, version=waiting(topic), reason="not yet")
        sync(f"{release}-3", V3_BREAKING, name=topic, consumers=(billing, ledger))
        for name in (billing, ledger):
            schemas.acknowledge(actor=SYSTEM_ACTOR, version=waiting(topic), consumer=service(name))
        wait_for(outbox_is_empty, timeout=30)

        pump(news_runner(billing))
        pump(news_runner(shipping))

    # then: billing's webhook received billing's news, signed with its own secret
    expected_billing = [
        (AWAITING, 2, False),
        (WITHDRAWN, 2, False),
        (AWAITING, 3, False),
        (PUBLISHED, 3, False),
    ]
    billing_news = received_news(billing_hook)
    assert summary(billing_news) == expected_billing
    for request, envelope in zip(billing_hook.received, billing_news, strict=True):
        assert request.path == "/hooks/orders"
        stamp = int(request.headers["webhook-timestamp"])
        assert request.headers["webhook-signature"] == webhook_signature(
            SECRET.encode(), str(envelope.event_id), stamp, request.body
        )
        assert envelope.payload["addressee"] == billing
        assert envelope.payload["topic"] == topic
    assert billing_news[1].payload["reason"] == "not yet"

    # ledger's stream holds ledger's news, the reminder included, read as any stream
    # consumer reads (its own group: its name)
    stream = stream_key(news_topic(ledger))
    [(_, entries)] = get_redis().xreadgroup(ledger, "ledger-1", {stream: ">"}, count=100)
    ledger_news = [Envelope.from_json(fields[b"envelope"]) for _, fields in entries]
    # everything announced since ledger subscribed: it is awaited throughout
    everything_since = [
        (AWAITING, 2, False),
        (AWAITING, 2, True),
        (WITHDRAWN, 2, False),
        (AWAITING, 3, False),
        (PUBLISHED, 3, False),
    ]
    assert summary(ledger_news) == everything_since
    assert {e.payload["addressee"] for e in ledger_news} == {ledger}

    # each copy is the consumer's own: one event id each, never shared, so each inbox
    # (or receiver deduplicating on webhook-id) handles it once
    billing_ids = [e.event_id for e in billing_news]
    ledger_ids = [e.event_id for e in ledger_news]
    assert len(set(billing_ids)) == len(billing_ids)
    assert len(set(ledger_ids)) == len(ledger_ids)
    assert not set(billing_ids) & set(ledger_ids)

    # shipping consumes parcels only: nothing of orders reached it
    assert shipping_hook.received == []

    # observers still see every announcement once on the shared topic, and each copy
    # names the announcement it copies
    shared = [
        Envelope.from_json(fields[b"envelope"])
        for _, fields in get_redis().xrange(stream_key("registry.schema"))
    ]
    about_orders = [e for e in shared if e.payload.get("topic") == topic]
    assert summary(about_orders) == [(PUBLISHED, 1, False), *everything_since]
    shared_ids = {str(e.event_id) for e in about_orders}
    assert {e.causation_id for e in billing_news + ledger_news} <= shared_ids


@pytest.mark.django_db
def test_a_consumer_without_a_subscription_is_listed_unreachable_and_gets_no_copy(
    names, news_secret
):
    topic, billing, ledger = names["topic"], names["billing"], names["ledger"]
    release = names["uid"]
    sync(f"{release}-1", V1, name=topic, consumers=(billing, ledger))
    subscribe(ledger, topic, transport=Subscription.Transport.REDIS_STREAM)

    # a published version: billing, with no subscription at all, is unreachable
    [item] = [i for i in selectors.unreachable_consumers() if i.topic == topic]
    assert (item.service, item.schema_version, item.awaiting_acknowledgement, item.reason) == (
        billing,
        1,
        False,
        "no_subscription",
    )
    assert "Subscribe" in item.detail

    # a breaking version waits: the item names it, and only ledger got a copy
    sync(f"{release}-2", V2_BREAKING, name=topic, consumers=(billing, ledger))
    [item] = [i for i in selectors.unreachable_consumers() if i.topic == topic]
    assert (item.service, item.schema_version, item.awaiting_acknowledgement) == (billing, 2, True)
    assert item.waiting_version_id == waiting(topic).pk
    with system_scope():
        addressed = list(
            OutboxEvent.objects.filter(topic__startswith="registry.news.").values_list(
                "topic", "event_type"
            )
        )
    assert addressed == [(news_topic(ledger), AWAITING)]

    # billing subscribes: reachable, and a reminder reaches it
    subscription = subscribe_webhook(billing, topic, "http://127.0.0.1:9/hooks", news_secret)
    assert not [i for i in selectors.unreachable_consumers() if i.topic == topic]
    schemas.remind(actor=SYSTEM_ACTOR, version=waiting(topic))
    with system_scope():
        reminded = OutboxEvent.objects.filter(topic=news_topic(billing)).values_list(
            "payload", flat=True
        )
        assert [(p["addressee"], p["reminder"]) for p in reminded] == [(billing, True)]

    # its only subscription deactivated: unreachable again, for another reason, and its
    # news delivery is deactivated with it
    services.subscription_update(actor=SYSTEM_ACTOR, subscription=subscription, is_active=False)
    [item] = [i for i in selectors.unreachable_consumers() if i.topic == topic]
    assert (item.service, item.reason) == (billing, "subscriptions_inactive")
    assert not selectors.news_subscriptions(billing).filter(is_active=True).exists()
    [gauge] = [m for m in gauges.collect() if m.name == UNREACHABLE_GAUGE]
    assert gauge.samples[0].value == len(selectors.unreachable_consumers()) >= 1


@pytest.mark.django_db
def test_news_delivery_follows_the_consumers_own_subscription(names, news_secret):
    topic, billing = names["topic"], names["billing"]
    sync(f"{names['uid']}-1", V1, name=topic, consumers=(billing,))
    subscription = subscribe_webhook(billing, topic, "http://127.0.0.1:9/first", news_secret)
    [mirror] = selectors.news_subscriptions(billing)
    assert (mirror.transport, mirror.endpoint, mirror.secret_ref, mirror.is_active) == (
        Subscription.Transport.WEBHOOK,
        "http://127.0.0.1:9/first",
        news_secret,
        True,
    )
    assert billing in mirror.topic.consumers.values_list("name", flat=True)

    services.subscription_update(
        actor=SYSTEM_ACTOR, subscription=subscription, endpoint="http://127.0.0.1:9/moved"
    )
    mirror.refresh_from_db()
    assert mirror.endpoint == "http://127.0.0.1:9/moved"


@pytest.mark.django_db
def test_unreachable_consumers_takes_the_same_queries_whatever_the_rows(
    django_assert_num_queries, names
):
    def add(n):
        """n topics with a version, each with a consumer that has no subscription."""
        for i in range(n):
            name = f"{names['topic']}x{n}x{i}"
            sync(f"{name}-1", V1, name=name, consumers=(f"reader-{n}-{i}",))

    add(1)
    with django_assert_num_queries(3):
        few = len(selectors.unreachable_consumers())
    add(4)
    with django_assert_num_queries(3):
        assert len(selectors.unreachable_consumers()) == few + 4


def test_news_topic_names_are_topic_names_and_never_shared():
    assert news_topic("billing") == "registry.news.billing"
    assert news_topic("steward.recent-events") == "registry.news.steward.recent-events"
    odd, other = news_topic("billing team"), news_topic("billing/team")
    assert odd.startswith("registry.news.billing_team.") and odd != other
    assert re.fullmatch(r"[a-zA-Z0-9._-]{1,249}", odd)


@pytest.mark.django_db
def test_set_up_gives_a_consumer_subscribed_before_addressed_news_its_news_subscription(names):
    # given: ledger subscribed before news was addressed (no news subscription made)
    topic, ledger, reader = names["topic"], names["ledger"], names["shipping"]
    sync(f"{names['uid']}-1", V1, name=topic, consumers=(ledger,))
    Subscription.objects.create(
        consumer=services.service_ensure(actor=SYSTEM_ACTOR, name=ledger),
        topic=selectors.topic_by_name(topic),
        transport=Subscription.Transport.REDIS_STREAM,
    )
    # and a subscriber that consumes no topic in the catalog
    Subscription.objects.create(
        consumer=services.service_ensure(actor=SYSTEM_ACTOR, name=reader),
        topic=selectors.topic_by_name(topic),
        transport=Subscription.Transport.REDIS_STREAM,
    )
    assert not selectors.news_subscriptions(ledger).exists()

    install.install_topics(SetupReport())
    install.install_topics(SetupReport())  # idempotent

    [mirror] = selectors.news_subscriptions(ledger)
    assert (mirror.transport, mirror.group_name, mirror.is_active) == (
        Subscription.Transport.REDIS_STREAM,
        ledger,
        True,
    )
    assert not selectors.news_subscriptions(reader).exists()


@pytest.mark.django_db
def test_a_stewards_own_consumer_handles_each_copy_of_its_news_once_through_its_inbox(names):
    # given: one of Steward's own consumers reads orders and so hears of its schema news
    topic, reader = names["topic"], f"steward.reader-{names['uid']}"
    sync(f"{names['uid']}-1", V1, name=topic, consumers=(reader,))
    subscribe(reader, topic, transport=Subscription.Transport.REDIS_STREAM)
    [mirror] = selectors.news_subscriptions(reader)
    ensure_subscription_groups([mirror])  # after commit in production (apps.eventing.signals)
    handled = []
    handler = Handler(reader, (news_topic(reader),), lambda envelope: handled.append(envelope))
    runner = consumer_runner(handler, [mirror])

    # when: news is dispatched, then dispatched again (a dispatcher that died before
    # deleting its rows publishes them once more)
    sync(f"{names['uid']}-2", V2_BREAKING, name=topic, consumers=(reader,))
    dispatcher.drain()
    stream = stream_key(news_topic(reader))
    copies = [Envelope.from_json(f[b"envelope"]) for _, f in get_redis().xrange(stream)]
    RedisStreamTransport().publish(copies)
    pump(runner)

    # then: the handler ran once for its one copy, and the inbox holds it once
    assert [(e.event_type, e.payload["addressee"]) for e in handled] == [(AWAITING, reader)]
    with system_scope():
        inbox = InboxEntry.objects.filter(consumer=reader).values_list("event_id", flat=True)
        assert list(inbox) == [handled[0].event_id]


@pytest.mark.django_db
def test_a_lowered_compatibility_level_is_news_to_each_consumer_of_that_topic_only(names):
    topic, billing, shipping = names["topic"], names["billing"], names["shipping"]
    parcels = {"name": names["other_topic"], "consumers": [shipping], "schema": V1}
    sync(f"{names['uid']}-1", V1, name=topic, consumers=(billing,), extra=[parcels])
    subscribe(billing, topic, transport=Subscription.Transport.REDIS_STREAM)
    subscribe(shipping, names["other_topic"], transport=Subscription.Transport.REDIS_STREAM)

    schemas.set_mode(actor=SYSTEM_ACTOR, topic=selectors.topic_by_name(topic), mode="NONE")

    with system_scope():
        addressed = list(
            OutboxEvent.objects.filter(topic__startswith="registry.news.").values_list(
                "topic", "event_type", "payload"
            )
        )
    assert [(t, e, p["addressee"], p["to"]) for t, e, p in addressed] == [
        (news_topic(billing), LOWERED, billing, "NONE")
    ]
