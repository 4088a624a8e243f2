"""Issue 38: a config's `alias`, `validateFields` and `compatibilityGroup`, kept, answered
and applied as the reference registry applies them (ConfigUpdateRequest's fields; its
AliasFilter; AbstractSchemaRegistry.isCompatibleWithPrevious), over HTTP and through an
unmodified confluent-kafka client."""

import json

import pytest
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.schema_registry_client import ServerConfig
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.registry import services
from apps.registry.models import SchemaVersion, Topic
from apps.tenancy.models import AuditEvent
from tests.registry import test_confluent_conformance as conformance
from tests.registry import test_confluent_drop_in as drop_in
from tests.registry.test_confluent_conformance import ORDER, ORDER_2, body, check, seed

pytestmark = pytest.mark.django_db(transaction=True)

http = conformance.http  # a registry:admin service's client
live = drop_in.live
ADMIN = drop_in.ADMIN

AVRO_EMAIL = {
    "type": "record",
    "name": "Contact",
    "fields": [{"name": "id", "type": "string"}, {"name": "email", "type": "string"}],
}


def reserving(document, kind="JSON", reserved=""):
    return body(document, kind, metadata={"properties": {"confluent:reserved": reserved}})


def grouped(document, major: str | None):
    """The document with metadata whose `major` property is `major` (None: not given,
    with another property, since a version without metadata takes its latest version's)."""
    properties = {"major": major} if major else {"owner": "orders"}
    return body(document, metadata={"properties": properties})


# --------------------------------------------------------------------------- the config


def test_the_three_fields_are_kept_answered_merged_and_cleared(http):
    """The reference's ConfigUpdateRequest carries `alias`, `validateFields` and
    `compatibilityGroup`: a PUT echoes the request, a field left out keeps its value, null
    clears it; GET answers what is kept (defaultToGlobal: what is in force), DELETE
    answers what it had. A value of another JSON type is refused, 422."""
    seed(http)
    alias = {"alias": "orders-value"}
    check(http, "PUT", "/config/legacy-value", 200, alias, json=alias)  # echoed
    check(http, "GET", "/config/legacy-value", 200, alias)
    sent = {"compatibility": "NONE", "validateFields": True}
    check(http, "PUT", "/config/legacy-value", 200, sent, json=sent)
    own = check(http, "GET", "/config/legacy-value", 200)
    assert own == {"compatibilityLevel": "NONE", **alias, "validateFields": True}
    registry = {"compatibilityGroup": "major", "validateFields": False}
    check(http, "PUT", "/config", 200, registry, json=registry)
    in_force = {"compatibilityLevel": "BACKWARD", **registry}
    check(http, "GET", "/config", 200, in_force)
    params = {"defaultToGlobal": "true"}
    check(http, "GET", "/config/payments-value", 200, in_force, params=params)
    for bad in ({"alias": 7}, {"validateFields": "yes"}, {"compatibilityGroup": ["major"]}):
        check(http, "PUT", "/config/legacy-value", 422, json=bad, error=422)
        check(http, "PUT", "/config", 422, json=bad, error=422)
    check(http, "PUT", "/config/legacy-value", 200, json={"alias": None})
    check(
        http,
        "DELETE",
        "/config/legacy-value",
        200,
        {"compatibilityLevel": "NONE", "validateFields": True},
    )
    check(http, "GET", "/config/legacy-value", 404, error=40408)
    with system_scope():
        audited = AuditEvent.objects.filter(action="topic.contract", object_repr__contains="legacy")
        changes = [e.changes["contract"][1] for e in audited.order_by("pk")]
    assert {"alias": "orders-value"} in changes
    assert {"alias": "orders-value", "validateFields": True} in changes


def test_set_config_through_the_client_keeps_the_compatibility_group(live):
    """confluent-kafka's ServerConfig sends `compatibilityGroup` and reads it back."""
    client, _ = live
    admin = client("tooling", ADMIN)
    admin.set_config("payments-value", ServerConfig(compatibility_group="major"))
    assert admin.get_config("payments-value").compatibility_group == "major"


# --------------------------------------------------------------------------- alias


def test_an_alias_answers_every_subject_call_as_the_aliased_subject(http):
    """The reference's AliasFilter rewrites the subject of `/subjects/{subject}/…` and
    `/compatibility/subjects/{subject}/…` to the alias its own config names: the call is
    the aliased subject's, answered with its name. `/config/{subject}` and the list of
    subjects are the alias subject's own; an alias is followed once, not chained."""
    first, second, _ = seed(http)
    check(http, "PUT", "/config/legacy-value", 200, json={"alias": "orders-value"})
    check(http, "GET", "/subjects/legacy-value/versions", 200, [1, 2])
    latest = check(http, "GET", "/subjects/legacy-value/versions/latest", 200)
    assert (latest["subject"], latest["version"], latest["id"]) == ("orders-value", 2, second)
    check(http, "GET", "/subjects/legacy-value/versions/1/schema", 200, ORDER)
    check(http, "GET", "/subjects/legacy-value/versions/1/referencedby", 200, [])
    # the aliased subject has versions, none with metadata (legacy itself has none: 40401)
    check(http, "GET", "/subjects/legacy-value/metadata", 404, error=40403)
    found = check(http, "POST", "/subjects/legacy-value", 200, json=body(ORDER))
    assert (found["subject"], found["id"]) == ("orders-value", first)
    path = "/compatibility/subjects/legacy-value/versions"
    check(http, "POST", f"{path}/latest", 200, {"is_compatible": True}, json=body(ORDER))
    added = {**ORDER_2, "properties": {**ORDER_2["properties"], "total": {}}}
    registered = check(http, "POST", "/subjects/legacy-value/versions", 200, json=body(added))
    assert registered["subject"] == "orders-value"
    assert SchemaVersion.objects.filter(topic__name="orders", role="value").count() == 3
    assert not Topic.objects.filter(name="legacy", schema_versions__isnull=False).exists()
    check(http, "GET", "/subjects", 200, ["orders-value", "payments-value"])
    check(http, "GET", "/config/legacy-value", 200, {"alias": "orders-value"})
    check(http, "DELETE", "/subjects/legacy-value/versions/3", 200, 3)
    check(http, "GET", "/subjects/orders-value/versions", 200, [1, 2])
    # an alias of an alias is followed once: to a subject with no versions of its own
    check(http, "PUT", "/config/older-value", 200, json={"alias": "legacy-value"})
    answer = check(http, "GET", "/subjects/older-value/versions", 404, error=40401)
    assert answer["message"] == "Subject 'legacy-value' not found."
    # an unqualified alias of a subject in a context names a subject of that context
    check(http, "POST", "/subjects/:.eu:orders-value/versions", 200, json=body(ORDER))
    check(http, "PUT", "/config/:.eu:legacy-value", 200, json={"alias": "orders-value"})
    in_eu = check(http, "GET", "/subjects/:.eu:legacy-value/versions/latest", 200)
    assert in_eu["subject"] == ":.eu:orders-value"


def test_an_alias_reaches_nothing_its_target_would_not(live):
    """The alias is resolved, then the call goes on under the caller's own rights: a
    producer of one topic that aliases its subject to another topic's cannot register or
    delete there through it (403, 40301, as by the target's name), and an alias to a
    subject that does not exist answers as that subject does (40401), telling nothing
    more than asking for it by name would."""
    _, http = live
    for topic, producer in (("orders", "orders"), ("payments", "payments")):
        services.topic_create(
            actor=SYSTEM_ACTOR,
            name=topic,
            producers=[services.service_ensure(actor=SYSTEM_ACTOR, name=producer)],
        )
    payments, orders = http("payments"), http("orders")
    assert payments.post("/subjects/payments-value/versions", json=body(ORDER)).status_code == 200
    assert orders.put("/config/orders-mirror", json={"alias": "payments-value"}).status_code == 200
    for method, path, sent in (
        ("POST", "/subjects/{}/versions", body(ORDER_2)),
        ("DELETE", "/subjects/{}/versions/1", None),
        ("DELETE", "/subjects/{}", None),
    ):
        direct = orders.request(method, path.format("payments-value"), json=sent)
        aliased = orders.request(method, path.format("orders-mirror"), json=sent)
        assert (direct.status_code, direct.json()["error_code"]) == (403, 40301)
        assert (aliased.status_code, aliased.json()) == (403, direct.json())
    assert SchemaVersion.objects.filter(topic__name="payments", deleted_at=None).count() == 1
    assert orders.put("/config/orders-ghost", json={"alias": "ghost-value"}).status_code == 200
    direct = orders.get("/subjects/ghost-value/versions/latest")
    aliased = orders.get("/subjects/orders-ghost/versions/latest")
    assert (aliased.status_code, aliased.json()) == (404, direct.json())
    assert aliased.json() == {"error_code": 40401, "message": "Subject 'ghost-value' not found."}


def test_a_client_reads_and_serializes_through_an_alias(live):
    """confluent-kafka's get_latest_version and a serializer with use.latest.version on a
    topic whose value subject is an alias get the aliased subject's latest schema and id."""
    client, _ = live
    admin = client("tooling", ADMIN)
    schema_id = admin.register_schema("orders-value", drop_in.schema(ORDER))
    calls = live[1]("tooling", ADMIN)
    assert calls.put("/config/legacy-value", json={"alias": "orders-value"}).status_code == 200
    latest = client().get_latest_version("legacy-value")
    assert (latest.subject, latest.schema_id) == ("orders-value", schema_id)
    serializer = JSONSerializer(
        json.dumps(ORDER),
        client(),
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    written = serializer({"id": "o-1"}, SerializationContext("legacy", MessageField.VALUE))
    assert written[0] == 0 and int.from_bytes(written[1:5], "big") == schema_id
    assert json.loads(written[5:]) == {"id": "o-1"}


# --------------------------------------------------------------------------- compatibilityGroup


STRICT_ID = {
    "type": "object",
    "properties": {"id": {"type": "string"}},
    "additionalProperties": False,
}
ID_RETYPED = {**STRICT_ID, "properties": {"id": {"type": "integer"}}}  # breaking under BACKWARD


def register(http, document, major: str | None, status: int):
    """Register `document` in group `major` on orders-value: registered (200) or
    incompatible (409, 40901)."""
    error = 40901 if status == 409 else None
    path = "/subjects/orders-value/versions"
    return check(http, "POST", path, status, json=grouped(document, major), error=error)


def test_a_compatibility_group_checks_only_the_versions_of_the_same_group(http):
    """Under `compatibilityGroup: major`, a new version is checked only against the
    versions whose metadata property `major` has the same value (none matching none):
    a breaking change in a new group registers, the same change in the old group is
    refused (409, 40901), at every level, and the compatibility test answers alike."""
    check(http, "PUT", "/config/orders-value", 200, json={"compatibility": "BACKWARD_TRANSITIVE"})
    register(http, STRICT_ID, "1", 200)
    register(http, ID_RETYPED, "1", 409)
    register(http, ID_RETYPED, None, 409)  # without a group, every version counts
    check(http, "PUT", "/config/orders-value", 200, json={"compatibilityGroup": "major"})
    path = "/compatibility/subjects/orders-value/versions"
    check(http, "POST", path, 200, {"is_compatible": False}, json=grouped(ID_RETYPED, "1"))
    check(http, "POST", path, 200, {"is_compatible": True}, json=grouped(ID_RETYPED, "2"))
    check(http, "POST", f"{path}/1", 200, {"is_compatible": True}, json=grouped(ID_RETYPED, "2"))
    register(http, ID_RETYPED, "1", 409)
    register(http, ID_RETYPED, "2", 200)
    # no value is a group of its own: nothing to check against yet
    register(http, STRICT_ID, None, 200)
    numbers = SchemaVersion.objects.filter(topic__name="orders").values_list("version", flat=True)
    assert sorted(numbers) == [1, 2, 3]


def test_a_registry_wide_compatibility_group_applies_to_every_subject(http):
    """The registry's config names the group for subjects without their own."""
    check(http, "PUT", "/config", 200, json={"compatibilityGroup": "major"})
    register(http, STRICT_ID, "1", 200)
    register(http, ID_RETYPED, "1", 409)
    register(http, ID_RETYPED, "2", 200)


# --------------------------------------------------------------------------- validateFields


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        (AVRO_EMAIL, "AVRO"),
        ({"type": "object", "properties": {"id": {}, "email": {}}}, "JSON"),
    ],
)
def test_validate_fields_refuses_a_field_its_metadata_reserves(http, document, kind):
    """With `validateFields` (the reference's `schema.validate.fields`, false by
    default), a schema with a top-level field that its `confluent:reserved` metadata
    property names is incompatible (409, 40901), whatever the level; without it, it
    registers."""
    check(http, "PUT", "/config/contacts-value", 200, json={"compatibility": "NONE"})
    check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        200,
        json=reserving(document, kind, "email"),
    )
    check(http, "DELETE", "/subjects/contacts-value", 200, [1])
    check(http, "DELETE", "/subjects/contacts-value", 200, [1], params={"permanent": "true"})
    check(http, "PUT", "/config/contacts-value", 200, json={"validateFields": True})
    refused = check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        409,
        json=reserving(document, kind, "x, email"),
        error=40901,
    )
    assert "conflicts with the reserved field email" in refused["message"]
    check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        200,
        json=reserving(document, kind, "phone"),
    )


def test_validate_fields_keeps_what_a_version_reserved_reserved(http):
    """A field the latest version reserved must stay reserved (409, 40901: "reserved
    field … removed"); reserving more is fine. The compatibility test answers alike."""
    check(http, "PUT", "/config", 200, json={"compatibility": "NONE", "validateFields": True})
    v1 = {"type": "object", "properties": {"id": {}}}
    check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        200,
        json=reserving(v1, reserved="future"),
    )
    v2 = {"type": "object", "properties": {"id": {}, "name": {}}}
    path = "/compatibility/subjects/contacts-value/versions/latest"
    answer = check(
        http, "POST", path, 200, json=reserving(v2, reserved="other"), params={"verbose": "true"}
    )
    assert answer["is_compatible"] is False
    assert any("reserved field future removed" in m for m in answer["messages"])
    refused = check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        409,
        json=reserving(v2, reserved="other"),
        error=40901,
    )
    assert "reserved field future removed" in refused["message"]
    check(
        http,
        "POST",
        "/subjects/contacts-value/versions",
        200,
        json=reserving(v2, reserved="future,extra"),
    )


def test_validate_fields_applies_to_protobuf_first_message(http):
    """A .proto file's top-level fields are its first message's, as the reference reads them."""
    proto = 'syntax = "proto3";\nmessage Contact {\n  string email = 1;\n}\n'
    sent = {
        "schema": proto,
        "schemaType": "PROTOBUF",
        "metadata": {"properties": {"confluent:reserved": "email"}},
    }
    check(http, "PUT", "/config", 200, json={"compatibility": "NONE", "validateFields": True})
    refused = check(http, "POST", "/subjects/contacts-value/versions", 409, json=sent, error=40901)
    assert "conflicts with the reserved field email" in refused["message"]
