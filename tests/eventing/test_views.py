"""The console's eventing pages (apps.eventing.views): for operators, with the backlog
chart, dead letters to replay or discard, effects and recent events."""

import random
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, RecentEvent
from apps.eventing.selectors import overview_page
from apps.eventing.views import DeadLetterListView
from apps.registry.models import Service, Subscription, Topic
from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY
from tests.console.test_list_rows import Table, bodies_as_values_and_as_instances, rendered
from tests.eventing.factories import add_eventing_rows, make_dead_letter
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db


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


def _subscriptions_and_events(tenant, topic, rng):
    """55 subscriptions (more than the page shows) whose failures, topics and consumers
    tie, dead letters of every state, and 14 recent events some received at once."""
    topics = [topic] + [
        Topic.objects.create(name=f"{topic.name}.{c}", current_schema_version=1) for c in "ba"
    ]
    now = timezone.now()
    subscriptions = []
    for i in range(55):
        webhook = rng.random() < 0.4
        subscriptions.append(
            Subscription.objects.create(
                consumer=Service.objects.get_or_create(name=f"svc-{rng.randrange(12):02d}-{i}")[0]
                if rng.random() < 0.2
                else Service.objects.get_or_create(name=f"svc-{i // 3:02d}")[0],
                topic=topics[i % 3],
                transport="webhook" if webhook else "redis_stream",
                endpoint="http://127.0.0.1:9/unused" if webhook else "",
                secret_ref="env:STEWARD_WEBHOOK_SECRET_HOOK" if webhook else "",
                consecutive_failures=rng.choice([0, 0, 1, 3]),
                last_error=rng.choice(["", "HTTP 500", "<timeout & reset>"]),
                last_delivered_at=rng.choice(
                    [None, now - timedelta(microseconds=rng.randrange(10**9))]
                ),
            )
        )
    with tenant_scope(tenant):
        for subscription in rng.sample(subscriptions, 20):
            for _ in range(rng.randrange(1, 4)):
                DeadLetter.objects.create(
                    subscription=subscription,
                    event_id=uuid.uuid4(),
                    topic=subscription.topic.name,
                    event_type="e",
                    tenant=tenant,
                    envelope={},
                    error="HTTP 500",
                    attempts=8,
                    state=rng.choice(DeadLetter.State.values),
                )
        moments = [now - timedelta(seconds=s) for s in (0, 1, 1, 2, 5)]
        for n in range(14):
            RecentEvent.objects.create(
                event_id=uuid.uuid4(),
                topic=rng.choice(topics).name,
                event_type=f"e{n}",
                tenant=tenant,
                aggregate_type="k",
                aggregate_id="1",
                occurred_at=now,
                received_at=rng.choice(moments),
            )


@pytest.mark.parametrize("seed", range(3))
def test_the_overviews_tables_are_what_their_querysets_read(tenant_a, topic, seed):
    """The overview reads its subscriptions and latest events in the statement of its
    figures (apps.eventing.selectors.overview_page): the rows, values and order of the
    querysets the page read before (the least healthy subscription first, each with its
    dead letters still dead; the newest events)."""
    _subscriptions_and_events(tenant_a, topic, random.Random(seed))
    with system_scope():
        health = (
            Subscription.objects.select_related("consumer", "topic")
            .annotate(
                dead_count=Count(
                    "dead_letters", filter=Q(dead_letters__state="dead"), distinct=True
                )
            )
            .order_by("-consecutive_failures", "topic__name", "consumer__name", "pk")[:50]
        )
        expected = [
            (
                s.topic.name, s.consumer.name, s.transport, s.get_transport_display(),
                s.consecutive_failures, s.last_error, s.last_delivered_at, s.dead_count,
            )
            for s in health
        ]  # fmt: skip
        latest = [(e.received_at, e.topic, e.event_type) for e in RecentEvent.objects.all()[:10]]
        page = overview_page()
    assert len(expected) == 50 and any(row[-1] for row in expected)
    assert [
        (
            s.topic, s.consumer, s.transport, s.transport_label,
            s.consecutive_failures, s.last_error, s.last_delivered_at, s.dead_count,
        )
        for s in page.subscriptions
    ] == expected  # fmt: skip
    assert [(e.received_at, e.topic, e.event_type) for e in page.latest] == latest
    assert len(latest) == 10


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
    client.post(reverse("eventing:dead-letter-discard", args=[second.pk]), {"confirm": "yes"})
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
    client.force_login(operator)
    assert_flat_query_count(
        lambda n: add_eventing_rows(n, tenant_a, topic, webhook_subscription),
        lambda: client.get(reverse(url_name)),
        few=2,
        more=6,
    )


def test_the_overview_query_count_does_not_grow(
    client, operator, tenant_a, topic, webhook_subscription
):
    client.force_login(operator)
    assert_flat_query_count(
        lambda n: add_eventing_rows(n, tenant_a, topic, webhook_subscription),
        lambda: client.get(reverse("eventing:overview")),
    )


def test_the_overview_reads_in_the_pages_scope_without_savepoints(
    client, operator, tenant_a, topic, webhook_subscription
):
    """The page runs in the system scope; its selectors' blocks of reads (the backlog,
    the inboxes, the effects and dead letters) add no savepoint and no setting to it."""
    add_eventing_rows(3, tenant_a, topic, webhook_subscription)
    client.force_login(operator)
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(reverse("eventing:overview")).status_code == 200
    statements = [q["sql"] for q in ctx.captured_queries]
    # What is left is the page's own scope: in a test it opens inside the test's
    # transaction (a savepoint, not BEGIN) and so restores the empty scope on leaving.
    assert len([sql for sql in statements if sql.startswith("SAVEPOINT")]) == 1
    assert len([sql for sql in statements if "set_config" in sql]) == 2


def test_an_operator_acting_for_a_tenant_still_uses_the_platform_pages(
    client, api, operator, tenant_a, region, topic
):
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


def test_row_actions_post_with_the_token_and_the_way_back(
    client, operator, tenant_a, topic, webhook_subscription
):
    make_dead_letter(tenant_a, topic, webhook_subscription)
    client.force_login(operator)
    url = reverse("eventing:dead-letter-list") + "?state=dead"
    html = client.get(url).content.decode()
    [row] = Table(html).rows
    actions = row[-1]
    [action] = DeadLetterListView.row_actions
    assert 'name="csrfmiddlewaretoken"' in actions
    assert f'<input type="hidden" name="next" value="{rendered(url)}">' in actions
    assert f">{action.label}</button>" in actions


def test_dead_letter_rows_read_as_values_write_what_the_instances_write(
    operator, tenant_a, topic, webhook_subscription
):
    """Every state (the Replay action only on the dead), short and long errors with
    markup: the list's `.values()` rows write the body its model instances write, for
    each sort and filter."""
    rng = random.Random(64)
    errors = ["HTTP 500", "<b>refused</b> & 'closed'", "x" * 79, "y" * 80, "z" * 81 + "<"]
    for n in range(24):
        dead = make_dead_letter(tenant_a, topic, webhook_subscription, n=n)
        with tenant_scope(tenant_a):
            DeadLetter.objects.filter(pk=dead.pk).update(
                state=rng.choice(DeadLetter.State.values),
                error=rng.choice(errors),
                attempts=rng.randrange(1, 20),
            )
    for query in ["", "sort=-attempts", "sort=subscription__consumer__name", "state=dead"]:
        written, expected, count = bodies_as_values_and_as_instances(
            DeadLetterListView, operator, query
        )
        assert count > 0
        assert written == expected
        if not query:
            assert ">Replay</button>" in written and "…</td>" in written
            assert written.count(">Replay</button>") < count  # not on every state
