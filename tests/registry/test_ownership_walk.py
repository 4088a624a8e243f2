"""One platform service cannot change what belongs to another, through any operation of
the registry's APIs: the Steward API under /api/v1/registry/ and the Schema Registry API
under /api/schema-registry/.

The walk reads every operation from the generated OpenAPI schema. Each is classified
below: a read (answered, changes nothing, shows nothing private of another service) or
an attempt by `bravo` on what is `alpha`'s (refused as 403, or 404 where the object is
not for bravo to see, and the registry unchanged). An operation the walk does not know
fails it: whoever adds one classifies it here.
"""

from __future__ import annotations

import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import (
    Acknowledgement,
    ReaderSchema,
    RegistryDefault,
    SchemaVersion,
    Service,
    Subscription,
    Topic,
)
from apps.tenancy import services as tenancy
from apps.tenancy.models import ServiceAccount
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.factories import V1, V2_BREAKING, V2_COMPATIBLE

pytestmark = pytest.mark.django_db

PREFIXES = ("/api/v1/registry/", "/api/schema-registry/")
V3_BREAKING = {**V1, "required": ["id", "total"], "properties": {**V1["properties"], "x": {}}}
REFUSED = (403, 404)


def _text(document) -> str:
    return json.dumps(document)


def _registry_body(document) -> dict:
    return {"schemaType": "JSON", "schema": _text(document)}


# method and path: (path parameters, body, kind). Kind "read": answered (2xx), nothing
# changes; "refused": bravo's attempt on alpha's object, 403 or 404, nothing changes.
# Several attempts may be given for one operation. Path parameters name the world's
# objects by key (see `world`).
OPERATIONS = {
    # ------------------------------------------------------------ Steward API
    "POST /api/v1/registry/model-sync/": [
        # joining alpha's topic as its producer, as a release that names it
        ({}, {"release": "j1", "topics": [{"name": "alpha.orders", "schema": V1}]}, "refused"),
        # superseding alpha's waiting version with a breaking schema of its own
        (
            {},
            {"release": "j2", "topics": [{"name": "alpha.orders", "schema": V3_BREAKING}]},
            "refused",
        ),
        # naming alpha as the releasing service
        (
            {},
            {"release": "j3", "service": "alpha", "topics": [{"name": "x.y", "schema": V1}]},
            "refused",
        ),
        # naming alpha as a producer of a topic it creates, without being one itself
        (
            {},
            {"release": "j4", "topics": [{"name": "x.z", "producers": ["alpha"], "schema": V1}]},
            "refused",
        ),
        # declaring a reader for alpha
        (
            {},
            {
                "release": "j5",
                "service": "alpha",
                "reads": [{"topic": "bravo.feed", "schema": V1}],
            },
            "refused",
        ),
    ],
    "GET /api/v1/registry/schema-versions/": [({}, None, "read")],
    "GET /api/v1/registry/schema-versions/{id}/": [({"id": "alpha_waiting"}, None, "read")],
    "POST /api/v1/registry/schema-versions/{id}/acknowledge/": [
        ({"id": "bravo_waiting"}, {"consumer": "alpha"}, "refused"),
    ],
    "POST /api/v1/registry/schema-versions/{id}/withdraw-acknowledgement/": [
        ({"id": "bravo_waiting"}, {"consumer": "alpha"}, "refused"),
    ],
    "POST /api/v1/registry/schema-versions/{id}/override/": [
        ({"id": "alpha_waiting"}, {"reason": "mine now"}, "refused"),
    ],
    "POST /api/v1/registry/schema-versions/{id}/remind/": [
        ({"id": "alpha_waiting"}, None, "refused"),
    ],
    "POST /api/v1/registry/schema-versions/{id}/withdraw/": [
        ({"id": "alpha_waiting"}, {"reason": "mine now"}, "refused"),
    ],
    "GET /api/v1/registry/services/": [({}, None, "read")],
    "POST /api/v1/registry/services/": [({}, {"name": "carol-two"}, "refused")],
    "GET /api/v1/registry/services/{id}/": [({"id": "alpha_service"}, None, "read")],
    "GET /api/v1/registry/subscriptions/": [({}, None, "read")],
    "POST /api/v1/registry/subscriptions/": [
        (
            {},
            {"consumer": "alpha", "topic": "alpha.orders", "transport": "redis_stream"},
            "refused",
        ),
    ],
    "GET /api/v1/registry/subscriptions/{id}/": [({"id": "alpha_subscription"}, None, "refused")],
    "PUT /api/v1/registry/subscriptions/{id}/": [
        (
            {"id": "alpha_subscription"},
            {"endpoint": "", "secret_ref": "", "is_active": False},
            "refused",
        ),
    ],
    "PATCH /api/v1/registry/subscriptions/{id}/": [
        ({"id": "alpha_subscription"}, {"is_active": False}, "refused"),
    ],
    "GET /api/v1/registry/topics/": [({}, None, "read")],
    "POST /api/v1/registry/topics/": [
        ({}, {"name": "carol.topic", "producers": ["alpha"]}, "refused"),
    ],
    "GET /api/v1/registry/topics/{name}/": [({"name": "alpha.orders"}, None, "read")],
    "PUT /api/v1/registry/topics/{name}/compatibility-policy/": [
        ({"name": "alpha.orders"}, {"compatibility_policy": "LENIENT"}, "refused"),
    ],
    "GET /api/v1/registry/topics/{name}/readers/": [({"name": "bravo.feed"}, None, "read")],
    "POST /api/v1/registry/topics/{name}/readers/": [
        ({"name": "bravo.feed"}, {"service": "alpha", "release": "evil", "schema": V1}, "refused"),
    ],
    # ------------------------------------------------------------ Schema Registry API
    # the root, a liveness check: an empty object whatever is posted
    "GET /api/schema-registry/": [({}, None, "read")],
    "POST /api/schema-registry/": [({}, {"any": "thing"}, "read")],
    "POST /api/schema-registry/compatibility/subjects/{subject}/versions": [
        ({"subject": "alpha.orders-value"}, _registry_body(V2_COMPATIBLE), "read"),
    ],
    "POST /api/schema-registry/compatibility/subjects/{subject}/versions/{version}": [
        ({"subject": "alpha.orders-value", "version": "1"}, _registry_body(V2_COMPATIBLE), "read"),
    ],
    "GET /api/schema-registry/config": [({}, None, "read")],
    "PUT /api/schema-registry/config": [({}, {"compatibility": "NONE"}, "refused")],
    "DELETE /api/schema-registry/config": [({}, None, "refused")],
    # the level in force: without defaultToGlobal, a subject with no level of its own
    # answers 40408, as the reference does
    "GET /api/schema-registry/config/{subject}": [
        ({"subject": "alpha.orders-value?defaultToGlobal=true"}, None, "read")
    ],
    "PUT /api/schema-registry/config/{subject}": [
        ({"subject": "alpha.orders-value"}, {"compatibility": "NONE"}, "refused"),
    ],
    "DELETE /api/schema-registry/config/{subject}": [
        ({"subject": "alpha.orders-value"}, None, "refused"),
    ],
    "GET /api/schema-registry/contexts": [({}, None, "read")],
    # the registry's own ids and release: nothing any tenant or service owns
    "GET /api/schema-registry/v1/metadata/id": [({}, None, "read")],
    "GET /api/schema-registry/v1/metadata/version": [({}, None, "read")],
    "GET /api/schema-registry/v1/metadata/deployment": [({}, None, "read")],
    "GET /api/schema-registry/mode": [({}, None, "read")],
    "PUT /api/schema-registry/mode": [({}, {"mode": "READONLY"}, "refused")],
    "DELETE /api/schema-registry/mode": [({}, None, "refused")],
    "GET /api/schema-registry/mode/{subject}": [({"subject": "alpha.orders-value"}, None, "read")],
    "PUT /api/schema-registry/mode/{subject}": [
        ({"subject": "alpha.orders-value"}, {"mode": "READONLY"}, "refused"),
        # a subject of alpha's topic that has no version yet
        ({"subject": "alpha.orders-key"}, {"mode": "IMPORT"}, "refused"),
        # clearing a mode: the one alpha set, and none at all (nothing to clear is no
        # leave to call it)
        ({"subject": "alpha.orders-value"}, {"mode": None}, "refused"),
        ({"subject": "alpha.orders-key"}, {"mode": None}, "refused"),
    ],
    "DELETE /api/schema-registry/mode/{subject}": [
        ({"subject": "alpha.orders-value"}, None, "refused"),
    ],
    "GET /api/schema-registry/schemas": [({}, None, "read")],
    "GET /api/schema-registry/schemas/ids/{schema_id}": [({"schema_id": "alpha_id"}, None, "read")],
    "GET /api/schema-registry/schemas/ids/{schema_id}/schema": [
        ({"schema_id": "alpha_id"}, None, "read"),
    ],
    "GET /api/schema-registry/schemas/ids/{schema_id}/subjects": [
        ({"schema_id": "alpha_id"}, None, "read"),
    ],
    "GET /api/schema-registry/schemas/ids/{schema_id}/versions": [
        ({"schema_id": "alpha_id"}, None, "read"),
    ],
    "GET /api/schema-registry/schemas/guids/{guid}": [({"guid": "alpha_guid"}, None, "read")],
    "GET /api/schema-registry/schemas/guids/{guid}/ids": [
        ({"guid": "alpha_guid"}, None, "read"),
    ],
    "GET /api/schema-registry/schemas/types": [({}, None, "read")],
    "GET /api/schema-registry/subjects": [({}, None, "read")],
    # a look-up: a POST that changes nothing
    "POST /api/schema-registry/subjects/{subject}": [
        ({"subject": "alpha.orders-value"}, _registry_body(V1), "read"),
    ],
    "DELETE /api/schema-registry/subjects/{subject}": [
        ({"subject": "alpha.orders-value"}, None, "refused"),
        # a subject no one produces, which alpha registered
        ({"subject": "loose.alpha-value"}, None, "refused"),
    ],
    "GET /api/schema-registry/subjects/{subject}/metadata": [
        ({"subject": "loose.alpha-value"}, None, "read"),
    ],
    "GET /api/schema-registry/subjects/{subject}/versions": [
        ({"subject": "alpha.orders-value"}, None, "read"),
    ],
    "POST /api/schema-registry/subjects/{subject}/versions": [
        ({"subject": "alpha.orders-value"}, _registry_body(V2_COMPATIBLE), "refused"),
        # a subject of alpha's topic that has no version yet
        ({"subject": "alpha.orders-key"}, _registry_body(V1), "refused"),
    ],
    "GET /api/schema-registry/subjects/{subject}/versions/{version}": [
        ({"subject": "alpha.orders-value", "version": "1"}, None, "read"),
    ],
    "DELETE /api/schema-registry/subjects/{subject}/versions/{version}": [
        ({"subject": "alpha.orders-value", "version": "1"}, None, "refused"),
        ({"subject": "loose.alpha-value", "version": "1"}, None, "refused"),
    ],
    "GET /api/schema-registry/subjects/{subject}/versions/{version}/referencedby": [
        ({"subject": "alpha.orders-value", "version": "1"}, None, "read"),
    ],
    "GET /api/schema-registry/subjects/{subject}/versions/{version}/schema": [
        ({"subject": "alpha.orders-value", "version": "1"}, None, "read"),
    ],
}


def registry_operations() -> list[str]:
    """Every operation of the registry's two APIs, as the generated schema has them."""
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    return sorted(
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        if path.startswith(PREFIXES)
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    )


def test_every_registry_operation_is_classified():
    found = registry_operations()
    unknown = sorted(set(found) - set(OPERATIONS))
    assert not unknown, f"classify these operations in {__name__}.OPERATIONS: {unknown}"
    gone = sorted(set(OPERATIONS) - set(found))
    assert not gone, f"these operations are gone from the schema: {gone}"


def _client(name: str) -> APIClient:
    """A client with a new token of the service account of that name (made once)."""
    scopes = ["registry:read", "registry:write"]
    with system_scope():  # the accounts' table is row-level secured
        account = ServiceAccount.objects.filter(name=name).first()
    if account is None:
        return bearer(APIClient(), service_token(scopes=scopes, name=name))
    issued = tenancy.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="again", scopes=scopes
    )
    return bearer(APIClient(), issued)


@pytest.fixture
def world():
    """alpha produces alpha.orders (v1 published, v2 breaking waiting on carol) and
    consumes bravo.feed, bravo's, through a subscription of its own, with a reader schema
    and an acknowledgement of bravo's waiting v2 (still waiting on carol); it registered
    loose.alpha-value through the Schema Registry API (a topic no one produces), with
    metadata."""
    alpha = services.service_ensure(actor=SYSTEM_ACTOR, name="alpha")
    bravo = services.service_ensure(actor=SYSTEM_ACTOR, name="bravo")

    def release(service, name, tag, schema, consumers):
        topics = [{"name": name, "consumers": consumers, "schema": schema}]
        schemas.model_sync(actor=SYSTEM_ACTOR, service=service, release=tag, topics=topics)

    release(alpha, "alpha.orders", "a1", V1, ["carol"])
    release(alpha, "alpha.orders", "a2", V2_BREAKING, ["carol"])
    release(bravo, "bravo.feed", "b1", V1, ["alpha", "carol"])
    release(bravo, "bravo.feed", "b2", V2_BREAKING, ["alpha", "carol"])
    feed = Topic.objects.get(name="bravo.feed")
    bravo_waiting = SchemaVersion.objects.get(topic=feed, state="awaiting_acknowledgement")
    schemas.acknowledge(actor=SYSTEM_ACTOR, version=bravo_waiting, consumer=alpha)
    schemas.reader_declare(
        actor=SYSTEM_ACTOR,
        service=alpha,
        topic=feed,
        release="a-r1",
        schema=V1,
        schema_type="JSON",
        role="value",
    )
    subscription = services.subscription_create(
        actor=SYSTEM_ACTOR, consumer=alpha, topic=feed, transport="redis_stream"
    )
    orders = Topic.objects.get(name="alpha.orders")
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=orders, role="value", mode="READWRITE")
    published = SchemaVersion.objects.get(topic=orders, version=1)
    loose = _client("alpha").post(
        "/api/schema-registry/subjects/loose.alpha-value/versions",
        {**_registry_body(V1), "metadata": {"properties": {"owner": "alpha"}}},
        format="json",
    )
    assert loose.status_code == 200, loose.content
    return {
        "alpha_waiting": SchemaVersion.objects.get(topic=orders, version=2).pk,
        "bravo_waiting": bravo_waiting.pk,
        "alpha_service": alpha.pk,
        "alpha_subscription": subscription.pk,
        "alpha_id": published.identity_id,
        "alpha_guid": published.identity.guid,
    }


def registry_state() -> dict:
    """What a change by anyone would show: every row of the registry that is someone's."""
    return {
        "services": sorted(Service.objects.values_list("name", flat=True)),
        "topics": [
            (
                t.name,
                t.compatibility_mode,
                t.compatibility_policy,
                t.subject_modes,
                sorted(p.name for p in t.producers.all()),
                sorted(c.name for c in t.consumers.all()),
            )
            for t in Topic.objects.prefetch_related("producers", "consumers").order_by("name")
        ],
        "versions": list(
            SchemaVersion.objects.order_by("pk").values_list("pk", "state", "deleted_at")
        ),
        "subscriptions": list(
            Subscription.objects.order_by("pk").values_list(
                "pk", "consumer__name", "endpoint", "secret_ref", "is_active"
            )
        ),
        "acknowledgements": list(
            Acknowledgement.objects.order_by("pk").values_list(
                "pk", "consumer__name", "withdrawn_at"
            )
        ),
        "readers": list(ReaderSchema.objects.order_by("pk").values_list("pk", "service__name")),
        "defaults": list(RegistryDefault.objects.order_by("key").values_list("key", "value")),
    }


def _attempts():
    for operation, attempts in sorted(OPERATIONS.items()):
        for n, attempt in enumerate(attempts):
            yield pytest.param(operation, *attempt, id=f"{operation} #{n}")


@pytest.mark.parametrize("operation, params, body, kind", list(_attempts()))
def test_one_service_cannot_change_what_is_anothers(world, operation, params, body, kind):
    # given bravo, a platform service with the registry's scopes, and alpha's objects
    bravo = _client("bravo")
    method, template = operation.split(" ", 1)
    path = template
    for name, value in params.items():
        path = path.replace("{" + name + "}", str(world.get(value, value)))
    before = registry_state()
    # when bravo calls the operation on what is alpha's
    sent = json.dumps(body) if body is not None else ""
    answer = bravo.generic(method, path, sent, content_type="application/json")
    # then a read answers and a change is refused; nothing of alpha's changed either way
    if kind == "read":
        assert 200 <= answer.status_code < 300, answer.content
    else:
        assert answer.status_code in REFUSED, answer.content
        if path.startswith("/api/schema-registry/") and answer.status_code == 403:
            assert answer.json()["error_code"] == 40301
    assert registry_state() == before


def test_a_service_lists_only_its_own_subscriptions(world):
    listed = _client("bravo").get("/api/v1/registry/subscriptions/").json()["results"]
    assert world["alpha_subscription"] not in [s["id"] for s in listed]
    mine = _client("alpha").get("/api/v1/registry/subscriptions/").json()["results"]
    # its own, and the news subscription that mirrors it
    assert world["alpha_subscription"] in [s["id"] for s in mine]
    assert {s["consumer"] for s in mine} == {"alpha"}


def _bodies():
    for operation in sorted(OPERATIONS):
        if operation.split(" ", 1)[0] in ("POST", "PUT", "PATCH"):
            params = OPERATIONS[operation][0][0]
            for body in ([1], None, "text", {"\x00": "\x00"}):
                yield pytest.param(operation, params, body, id=f"{operation} {body!r}")


@pytest.mark.parametrize("operation, params, body", list(_bodies()))
def test_a_body_that_is_no_object_is_bad_input_on_every_registry_write(
    world, operator, operation, params, body
):
    """Whoever sends it (an operator may do all of these), a body that is not an object,
    or that holds a NUL, is a 4xx, never a 5xx."""
    api = APIClient()
    api.force_login(operator)
    method, path = operation.split(" ", 1)
    for name, value in params.items():
        path = path.replace("{" + name + "}", str(world.get(value, value)))
    answer = api.generic(method, path, json.dumps(body), content_type="application/json")
    # the registry's root keeps nothing: any object, a NUL in it too, is answered {}
    # (as the reference answers it); a registration without `schema` (a NUL only in a
    # field it does not read) takes the subject's latest version's, as the reference's
    # does; what is no object is still 400
    registers = operation == "POST /api/schema-registry/subjects/{subject}/versions"
    takes_no_body = operation.endswith("/remind/") or (
        (path == "/api/schema-registry/" or registers) and isinstance(body, dict)
    )
    assert answer.status_code < 500, answer.content
    assert takes_no_body or 400 <= answer.status_code < 500, answer.content
