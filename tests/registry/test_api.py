"""The registry's REST API: the catalog (services, topics, subscriptions), ModelSync and
schema versions (apps.registry.api.views)."""

import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import InvalidTransition
from apps.core.redis import get_redis
from apps.core.scope import system_scope
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import SchemaVersion, Service, Subscription, Topic
from apps.tenancy.models import AuditEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count
from tests.registry.factories import (
    V1,
    V2_BREAKING,
    add_catalog_rows,
    add_versions,
    consumer,
    events,
    outcome,
    pending,
    sync,
    waiting_version,
)
from tests.support import problem

pytestmark = pytest.mark.django_db


def test_the_api_syncs_and_consumers_acknowledge_for_themselves():
    release = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    body = {
        "release": "r1",
        "topics": [{"name": "orders.order", "consumers": ["billing"], "schema": V1}],
    }
    assert release.post("/api/v1/registry/model-sync/", body, format="json").status_code == 200
    body = {
        "release": "r2",
        "topics": [{"name": "orders.order", "consumers": ["billing"], "schema": V2_BREAKING}],
    }
    answer = release.post("/api/v1/registry/model-sync/", body, format="json").json()
    assert outcome(answer)["awaiting"] == ["billing"]
    url = f"/api/v1/registry/schema-versions/{pending().pk}/"
    ledger = bearer(APIClient(), service_token(scopes=["registry:write"], name="ledger"))
    refused = ledger.post(f"{url}acknowledge/", {"consumer": "billing"}, format="json")
    assert refused.status_code == 403
    billing = bearer(APIClient(), service_token(scopes=["registry:write"], name="billing"))
    done = billing.post(f"{url}acknowledge/", {"consumer": "billing"}, format="json")
    assert done.status_code == 200 and done.json()["state"] == "published"
    shown = billing.get(url).json()
    assert shown["acknowledgements"][0]["consumer"] == "billing"


def test_a_producer_withdraws_a_waiting_version_and_it_is_never_published():
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    release = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    stranger = bearer(APIClient(), service_token(scopes=["registry:write"], name="billing"))
    url = f"/api/v1/registry/schema-versions/{pending().pk}/withdraw/"
    assert stranger.post(url, {"reason": "x"}, format="json").status_code == 403
    done = release.post(url, {"reason": "wrong release"}, format="json")
    assert done.status_code == 200 and done.json()["state"] == "withdrawn"
    with pytest.raises(InvalidTransition):
        schemas.acknowledge(
            actor=SYSTEM_ACTOR,
            version=SchemaVersion.objects.get(state="withdrawn"),
            consumer=consumer("billing"),
        )
    assert [e["version"] for e in events("SchemaVersionPublished")] == [1]
    # the next release may bring the same schema again, as a new version
    assert outcome(sync("r3", V2_BREAKING))["version"] == 3


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


def test_subscriptions_are_not_for_tenants_to_read(api, admin_a, topic, webhook_subscription):
    api.force_login(admin_a)
    assert api.get("/api/v1/registry/subscriptions/").status_code == 403
    assert api.get("/api/v1/registry/topics/").status_code == 200


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


def test_a_token_that_names_another_service_in_a_model_sync_is_refused(api):
    release = bearer(api, service_token(scopes=["registry:write"], name="orders"))
    body = {
        "release": "r1",
        "service": "billing",
        "topics": [{"name": "orders.order", "schema": V1}],
    }
    refused = release.post("/api/v1/registry/model-sync/", body, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert refused.json()["detail"] == "This token speaks for orders, not billing."
    assert not SchemaVersion.objects.exists()


def test_an_operator_names_the_releasing_service(api, operator):
    api.force_login(operator)
    body = {"release": "r1", "topics": [{"name": "orders.order", "schema": V1}]}
    unnamed = api.post("/api/v1/registry/model-sync/", body, format="json")
    assert unnamed.status_code == 400 and unnamed.json()["code"] == "service_required"
    named = api.post("/api/v1/registry/model-sync/", {**body, "service": "orders"}, format="json")
    assert named.status_code == 200
    assert SchemaVersion.objects.get().submitted_by.name == "orders"


def test_overriding_is_refused_before_the_body_is_read(api, operator):
    url = f"/api/v1/registry/schema-versions/{waiting_version().pk}/override/"
    service = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    refused = service.post(url, {}, format="json")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Only an operator may override."
    api.force_login(operator)
    refused = api.post(url, {}, format="json")  # no reason either: the 403 comes first
    assert refused.status_code == 403
    assert refused.json()["detail"] == "Overriding needs the override_schemaversion permission."
    assert pending().state == "awaiting_acknowledgement"


# --------------------------------------------------------------------------- list query counts


@pytest.mark.parametrize(
    "url, add_rows",
    [
        ("/api/v1/registry/services/", add_catalog_rows),
        ("/api/v1/registry/topics/", add_catalog_rows),
        ("/api/v1/registry/subscriptions/", add_catalog_rows),
        ("/api/v1/registry/schema-versions/", add_versions),
        ("/api/schema-registry/subjects", add_versions),
        ("/api/schema-registry/subjects/orders.order-value/versions", add_versions),
    ],
)
def test_list_endpoints_query_count_does_not_grow(api, operator, url, add_rows):
    sync("r0", V1)  # orders.order, for the subject's versions
    api.force_login(operator)
    assert_flat_query_count(add_rows, lambda: api.get(url))


@pytest.mark.parametrize("body", [[1], None, {"reason": "because\x00"}, "text"])
def test_a_withdrawal_whose_body_is_not_an_object_or_holds_a_nul_is_bad_input(body):
    # given a waiting version and its producer
    waiting_version()
    release = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    url = f"/api/v1/registry/schema-versions/{pending().pk}/withdraw/"
    # when it sends a body that is no object, or a reason with a NUL
    answer = release.generic("POST", url, json.dumps(body), content_type="application/json")
    # then it is told so, and nothing changed
    problem(answer, 400, "invalid")
    assert pending().state == "awaiting_acknowledgement"


def test_a_subscription_may_be_created_inactive(api, operator, topic):
    api.force_login(operator)
    api.post("/api/v1/registry/services/", {"name": "billing"})
    body = {"consumer": "billing", "topic": topic.name, "transport": "redis_stream"}
    created = api.post("/api/v1/registry/subscriptions/", {**body, "is_active": False})
    assert created.status_code == 201, created.content
    assert Subscription.objects.get(pk=created.json()["id"]).is_active is False


@pytest.mark.parametrize("body", [[1], None, "text", {"consumer": "billing\x00"}])
def test_a_subscription_body_that_is_not_an_object_or_holds_a_nul_is_bad_input(
    api, operator, topic, body
):
    api.force_login(operator)
    sent = json.dumps(body)
    answer = api.generic(
        "POST", "/api/v1/registry/subscriptions/", sent, content_type="application/json"
    )
    problem(answer, 400, "invalid")


NUL_SCHEMA_TEXT = json.dumps({"type": "object", "title": "a\x00b"})


@pytest.mark.parametrize(
    "path, body, status",
    [
        (
            "/api/schema-registry/subjects/nul.topic-value/versions",
            {"schemaType": "JSON", "schema": NUL_SCHEMA_TEXT},
            422,
        ),
        (
            "/api/schema-registry/subjects/nul.topic-value/versions",
            {"schemaType": "AVRO", "schema": json.dumps({"type": "string", "doc": "a\x00"})},
            422,
        ),
        (
            "/api/v1/registry/model-sync/",
            {"release": "r1", "topics": [{"name": "nul.topic", "schema": NUL_SCHEMA_TEXT}]},
            200,
        ),
    ],
)
def test_a_schema_sent_as_text_with_a_nul_is_refused_as_invalid(path, body, status):
    # the body holds no NUL itself: the schema's text escapes it, so only parsing shows it
    release = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    answer = release.generic("POST", path, json.dumps(body), content_type="application/json")
    assert answer.status_code == status, answer.content
    assert "NUL" in answer.content.decode()
    assert not SchemaVersion.objects.filter(topic__name="nul.topic").exists()


def _ledger_entries():
    """ledger produces ledger.entries, read by billing: v1 published, v2 breaking waiting."""
    ledger = Service.objects.get_or_create(name="ledger")[0]
    for release, schema in (("l1", V1), ("l2", V2_BREAKING)):
        topics = [{"name": "ledger.entries", "consumers": ["billing"], "schema": schema}]
        schemas.model_sync(actor=SYSTEM_ACTOR, service=ledger, release=release, topics=topics)
    return Topic.objects.get(name="ledger.entries")


def test_a_model_sync_does_not_make_its_service_a_producer_of_anothers_topic():
    # given ledger's topic, with a breaking version waiting for billing
    topic = _ledger_entries()
    waiting = SchemaVersion.objects.get(topic=topic, state="awaiting_acknowledgement")
    orders = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    # when orders syncs a release that names it, with its current schema or a breaking one
    for release, schema in (("x1", V1), ("x2", {**V2_BREAKING, "title": "mine"})):
        body = {"release": release, "topics": [{"name": "ledger.entries", "schema": schema}]}
        answer = orders.post("/api/v1/registry/model-sync/", body, format="json")
        # then it is refused, and neither joins it nor pushes ledger's version aside
        problem(answer, 403, "permission_denied")
    assert [p.name for p in topic.producers.all()] == ["ledger"]
    waiting.refresh_from_db()
    assert waiting.state == "awaiting_acknowledgement"
    # nor may it lower the topic's level through the Schema Registry API
    level = orders.put(
        "/api/schema-registry/config/ledger.entries-value", {"compatibility": "NONE"}, format="json"
    )
    assert (level.status_code, level.json()["error_code"]) == (403, 40301)


def test_a_producer_grants_another_service_its_topic_audited_and_announced():
    topic = _ledger_entries()
    ledger = bearer(APIClient(), service_token(scopes=["registry:write"], name="ledger"))
    body = {
        "release": "l3",
        "topics": [{"name": "ledger.entries", "producers": ["ledger", "orders"], "schema": V1}],
    }
    answer = ledger.post("/api/v1/registry/model-sync/", body, format="json")
    assert answer.status_code == 200, answer.content
    assert sorted(p.name for p in topic.producers.all()) == ["ledger", "orders"]
    with system_scope():
        audited = AuditEvent.objects.get(action="topic.producers_join")
    assert audited.changes == {"producers": [["ledger"], ["ledger", "orders"]]}
    [news] = events("TopicProducersJoined")
    assert news["joined"] == ["orders"] and news["consumers"] == ["billing"]


def test_an_operator_makes_a_service_a_producer_of_an_existing_topic(api, operator):
    topic = _ledger_entries()
    api.force_login(operator)
    body = {
        "release": "o1",
        "service": "orders",
        "topics": [{"name": "ledger.entries", "schema": V1}],
    }
    assert api.post("/api/v1/registry/model-sync/", body, format="json").status_code == 200
    assert sorted(p.name for p in topic.producers.all()) == ["ledger", "orders"]
    assert events("TopicProducersJoined")[0]["by"] == "op"


def test_a_subscription_is_changed_only_by_its_consumer_and_operators(api, operator, topic):
    # given billing's subscription
    billing = services.service_ensure(actor=SYSTEM_ACTOR, name="billing")
    mine = services.subscription_create(
        actor=SYSTEM_ACTOR, consumer=billing, topic=topic, transport="redis_stream"
    )
    url = f"/api/v1/registry/subscriptions/{mine.pk}/"
    orders = bearer(APIClient(), service_token(scopes=["registry:write"], name="orders"))
    # another service neither sees nor changes it, nor makes one in billing's name
    problem(orders.patch(url, {"is_active": False}, format="json"), 404, "not_found")
    problem(orders.get(url), 404, "not_found")
    body = {"consumer": "billing", "topic": topic.name, "transport": "webhook"}
    created = orders.post("/api/v1/registry/subscriptions/", body, format="json")
    problem(created, 403, "permission_denied")
    mine.refresh_from_db()
    assert mine.is_active is True
    # billing and operators do
    own = bearer(APIClient(), service_token(scopes=["registry:write"], name="billing"))
    assert own.patch(url, {"is_active": False}, format="json").status_code == 200
    api.force_login(operator)
    assert api.patch(url, {"is_active": True}, format="json").status_code == 200


def test_a_waiting_version_of_a_subject_no_one_produces_is_replaced_only_by_its_submitter():
    # given a subject alpha registered through the Schema Registry API (its topic has no
    # producer), read by billing, with alpha's breaking version waiting
    alpha = bearer(APIClient(), service_token(scopes=["registry:write"], name="alpha"))
    url = "/api/schema-registry/subjects/loose.t-value/versions"

    def register(client, schema):
        body = {"schemaType": "JSON", "schema": json.dumps(schema)}
        return client.post(url, body, format="json")

    assert register(alpha, V1).status_code == 200
    Topic.objects.get(name="loose.t").consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="billing")
    )
    assert register(alpha, V2_BREAKING).status_code == 409
    waiting = SchemaVersion.objects.get(topic__name="loose.t", state="awaiting_acknowledgement")
    # when another service registers a breaking schema of its own there
    bravo = bearer(APIClient(), service_token(scopes=["registry:write"], name="bravo"))
    refused = register(bravo, {**V2_BREAKING, "title": "bravo's"})
    # then alpha's version still waits, and no version of bravo's was made
    assert refused.status_code == 409, refused.content
    waiting.refresh_from_db()
    assert waiting.state == "awaiting_acknowledgement"
    assert SchemaVersion.objects.filter(topic__name="loose.t").count() == 2
    # while alpha itself may replace it
    assert register(alpha, {**V2_BREAKING, "title": "alpha's"}).status_code == 409
    waiting.refresh_from_db()
    assert waiting.state == "superseded"


def test_on_a_subject_no_one_produces_a_service_deletes_only_what_it_registered():
    alpha = bearer(APIClient(), service_token(scopes=["registry:write"], name="alpha"))
    bravo = bearer(APIClient(), service_token(scopes=["registry:write"], name="bravo"))
    url = "/api/schema-registry/subjects/loose.d-value"
    body = {"schemaType": "JSON", "schema": json.dumps(V1)}
    assert alpha.post(f"{url}/versions", body, format="json").status_code == 200
    for attempt in (bravo.delete(f"{url}/versions/1"), bravo.delete(url)):
        assert (attempt.status_code, attempt.json()["error_code"]) == (403, 40301)
    assert SchemaVersion.objects.get(topic__name="loose.d").deleted_at is None
    assert alpha.delete(url).json() == [1]
