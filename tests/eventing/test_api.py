"""The eventing API for operators and platform services (apps.eventing.api.views)."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from tests.conftest import bearer
from tests.eventing.factories import add_eventing_rows, make_dead_letter
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count
from tests.support import run_concurrently

pytestmark = pytest.mark.django_db


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
    dead = make_dead_letter(tenant_a, topic, webhook_subscription)

    def replay():
        client = Client()
        client.force_login(operator)
        return client.post(f"/api/v1/eventing/dead-letters/{dead.pk}/replay/").status_code

    statuses, errors = run_concurrently(replay, 4)
    assert errors == []
    assert sorted(statuses) == [200, 409, 409, 409]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/eventing/dead-letters/",
        "/api/v1/eventing/uncertain-effects/",
        "/api/v1/eventing/recent-events/",
    ],
)
def test_list_endpoints_query_count_does_not_grow(
    api, operator, tenant_a, topic, webhook_subscription, url
):
    api.force_login(operator)
    assert_flat_query_count(
        lambda n: add_eventing_rows(n, tenant_a, topic, webhook_subscription),
        lambda: api.get(url),
    )


def test_a_service_sees_and_acts_on_its_own_dead_letters_only(
    tenant_a, topic, webhook_subscription
):
    from apps.eventing.models import DeadLetter
    from apps.tenancy.models import TOKEN_SCOPES

    dead = make_dead_letter(tenant_a, topic, webhook_subscription)
    other = bearer(APIClient(), service_token(name="other", scopes=TOKEN_SCOPES))
    url = f"/api/v1/eventing/dead-letters/{dead.pk}/"
    # another service: as if it did not exist, and nothing changes
    assert other.get("/api/v1/eventing/dead-letters/").json()["results"] == []
    assert other.get(url).status_code == 404
    for action in ("replay", "discard"):
        answer = other.post(f"{url}{action}/")
        assert answer.status_code == 404, action
    with system_scope():
        assert DeadLetter.objects.get(pk=dead.pk).state == DeadLetter.State.DEAD
    # its consumer's own account
    owner = bearer(APIClient(), service_token(name="receiver", scopes=TOKEN_SCOPES))
    assert [row["id"] for row in owner.get("/api/v1/eventing/dead-letters/").json()["results"]] == [
        dead.pk
    ]
    assert owner.post(f"{url}replay/").json()["state"] == "replaying"
