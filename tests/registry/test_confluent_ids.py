"""Schema ids shared across subjects, each subject's own mode, and what one registration
costs in statements: the Schema Registry API as the reference registry keeps them."""

import base64
import json
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.error import SchemaRegistryError
from django.test import Client

from apps.core.context import SYSTEM_ACTOR
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import SchemaIdentity, SchemaVersion, Topic
from tests.factories import service_token
from tests.query_counts import queries_for
from tests.registry.test_schemas import V1, V2_BREAKING, V2_COMPATIBLE

pytestmark_live = pytest.mark.django_db(transaction=True)


def schema(document, references=None):
    return Schema(json.dumps(document), "JSON", references or [])


# --------------------------------------------------------------------------- shared ids


@pytestmark_live
def test_the_same_schema_under_several_subjects_has_one_id(live):
    new_client, http = live
    client = new_client()
    # given: one schema registered under three subjects of two topics
    first = client.register_schema("payments-value", schema(V1))
    assert client.register_schema("payments-key", schema(V1)) == first
    assert new_client().register_schema("refunds-value", schema(V1)) == first
    # then: the id lists every subject-version using it, and lookups answer it
    assert new_client().get_subjects_by_schema_id(first) == [
        "payments-key",
        "payments-value",
        "refunds-value",
    ]
    found = [(v.subject, v.version) for v in new_client().get_schema_versions(first)]
    assert found == [("payments-key", 1), ("payments-value", 1), ("refunds-value", 1)]
    assert new_client().lookup_schema("refunds-value", schema(V1)).schema_id == first
    assert new_client().register_schema("refunds-value", schema(V1)) == first
    # formatting is not identity: the same schema re-sent indented is the same id
    indented = Schema(json.dumps(V1, indent=2), "JSON")
    assert new_client().register_schema("audits-value", indented) == first
    # a different schema is another id, and a new version of one subject leaves the rest
    second = new_client().register_schema("payments-value", schema(V2_COMPATIBLE))
    assert second != first
    assert new_client().get_subjects_by_schema_id(second) == ["payments-value"]
    assert SchemaIdentity.objects.count() == 2


@pytestmark_live
def test_deleting_one_subjects_version_leaves_the_id_to_the_others(live):
    new_client, http = live
    shared = new_client().register_schema("payments-value", schema(V1))
    new_client().register_schema("refunds-value", schema(V1))
    # when: one subject's version is soft, then hard deleted
    assert http.delete("/subjects/payments-value/versions/1").json() == 1
    assert new_client().get_subjects_by_schema_id(shared) == ["refunds-value"]
    listed = http.get(f"/schemas/ids/{shared}/subjects", params={"deleted": "true"}).json()
    assert listed == ["payments-value", "refunds-value"]
    assert http.delete("/subjects/payments-value/versions/1?permanent=true").json() == 1
    # then: the id still resolves, for the subject that keeps it
    assert json.loads(new_client().get_schema(shared).schema_str) == V1
    assert new_client().get_subjects_by_schema_id(shared) == ["refunds-value"]
    # and registering the schema again on the emptied subject reuses the id
    assert new_client().register_schema("payments-value", schema(V1)) == shared
    # when the last version using it is hard deleted, the id is not found
    for subject in ("payments-value", "refunds-value"):
        http.delete(f"/subjects/{subject}")
        http.delete(f"/subjects/{subject}", params={"permanent": "true"})
    gone = http.get(f"/schemas/ids/{shared}/subjects")
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)
    assert http.get(f"/schemas/ids/{shared}").json()["error_code"] == 40403


@pytestmark_live
def test_the_same_text_with_other_references_is_another_schema(live):
    new_client, http = live
    client = new_client()
    address = {"type": "object", "properties": {"zip": {"type": "string"}}}
    client.register_schema("address-value", schema(address))
    client.register_schema("address-value", schema({**address, "title": "v2"}))
    order = {"type": "object", "properties": {"ship_to": {"$ref": "address.json"}}}
    one = [SchemaReference("address.json", "address-value", 1)]
    two = [SchemaReference("address.json", "address-value", 2)]
    a = client.register_schema("orders-value", schema(order, one))
    b = new_client().register_schema("returns-value", schema(order, one))
    c = new_client().register_schema("exchanges-value", schema(order, two))
    assert a == b != c
    # the referenced version's referencedby lists the id once, used by two subjects
    assert new_client().get_referenced_by("address-value", 1) == [a]


@pytestmark_live
def test_import_keeps_ids_refuses_another_schema_under_one_and_accepts_the_same(live):
    new_client, http = live
    for name in ("legacy", "archive"):
        topic = services.topic_create(actor=SYSTEM_ACTOR, name=name)
        schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="IMPORT")

    def imported(subject, document, schema_id, version):
        body = {"schema": json.dumps(document), "schemaType": "JSON"}
        return http.post(
            f"/subjects/{subject}/versions", json={**body, "id": schema_id, "version": version}
        )

    assert imported("legacy-value", V1, 9001, 1).json()["id"] == 9001
    # the same schema under the same id in another subject: accepted, one id for both
    assert imported("archive-value", V1, 9001, 1).json()["id"] == 9001
    assert new_client().get_subjects_by_schema_id(9001) == ["archive-value", "legacy-value"]
    # another schema under that id: refused as the reference refuses it
    clash = imported("legacy-value", V2_BREAKING, 9001, 2)
    assert (clash.status_code, clash.json()) == (
        422,
        {"error_code": 42205, "message": "Overwrite new schema with id 9001 is not permitted."},
    )
    # the same schema under a second id, as the source registry may have it: kept, and
    # both ids resolve; new registrations of it reuse the first
    assert imported("archive-value", V1, 9002, 2).json()["id"] == 9002
    assert json.loads(new_client().get_schema(9002).schema_str) == V1
    topic = Topic.objects.get(name="legacy")
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="")
    assert new_client().register_schema("fresh-value", schema(V1)) == 9001
    assert new_client().register_schema("fresh-value", schema(V2_COMPATIBLE)) > 9002


@pytestmark_live
def test_import_gives_an_id_whose_versions_were_all_deleted_permanently_to_another_schema(live):
    """As the reference: an id is another schema's while a version has it, soft-deleted
    ones included; once every one is deleted permanently, an import may give it anew."""
    new_client, http = live
    topic = services.topic_create(actor=SYSTEM_ACTOR, name="migrated")
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="IMPORT")

    def imported(document, version):
        body = {"schema": json.dumps(document), "schemaType": "JSON", "id": 9101}
        return http.post("/subjects/migrated-value/versions", json={**body, "version": version})

    assert imported(V1, 1).json()["id"] == 9101
    # given: its one version soft-deleted: the id still names V1
    assert http.delete("/subjects/migrated-value/versions/1").json() == 1
    refused = imported(V2_BREAKING, 2)
    assert (refused.status_code, refused.json()["error_code"]) == (422, 42205)
    # when: deleted permanently too
    gone = http.delete("/subjects/migrated-value/versions/1", params={"permanent": "true"})
    assert gone.json() == 1
    assert http.get("/schemas/ids/9101").json()["error_code"] == 40403
    # then: another schema may be imported under the id, and the id names it
    again = imported(V2_BREAKING, 1)
    assert (again.status_code, again.json()["id"]) == (200, 9101), again.json()
    assert json.loads(new_client().get_schema(9101).schema_str) == V2_BREAKING
    assert http.get("/subjects/migrated-value/versions/1").json()["id"] == 9101
    # and the schema the id named before gets an id of its own when registered again
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="")
    assert new_client().register_schema("elsewhere-value", schema(V1)) not in (9101, None)
    assert SchemaIdentity.objects.get(pk=9101).schema_type == "JSON"


# --------------------------------------------------------------------------- modes


@pytestmark_live
def test_each_subject_has_its_own_mode(live):
    new_client, http = live
    orders = services.service_ensure(actor=SYSTEM_ACTOR, name="orders")
    services.topic_create(actor=SYSTEM_ACTOR, name="payments", producers=[orders])
    client = new_client()
    client.register_schema("payments-value", schema(V1))
    client.register_schema("payments-key", schema(V1))
    # when: the value subject is made read-only
    assert client.update_mode("payments-value", "READONLY") == "READONLY"
    # then: the key subject of the same topic is not
    assert new_client().get_mode("payments-value") == "READONLY"
    in_force = http.get("/mode/payments-key", params={"defaultToGlobal": "true"})
    assert in_force.json() == {"mode": "READWRITE"}
    own = http.get("/mode/payments-key")  # its own only, as the reference answers by default
    assert (own.status_code, own.json()["error_code"]) == (404, 40409)
    with pytest.raises(SchemaRegistryError) as refused:
        new_client().register_schema("payments-value", schema(V2_COMPATIBLE))
    assert refused.value.error_code == 42205
    assert new_client().register_schema("payments-key", schema(V2_COMPATIBLE)) > 0
    assert Topic.objects.get(name="payments").subject_modes == {"value": "READONLY"}
    # DELETE answers the mode the subject had; then it has none of its own
    assert http.delete("/mode/payments-value").json() == {"mode": "READONLY"}
    again = http.delete("/mode/payments-value")
    assert (again.status_code, again.json()["error_code"]) == (404, 40401)
    assert new_client().register_schema("payments-value", schema(V2_COMPATIBLE)) > 0
    # IMPORT needs an empty subject, unless forced: the key's versions do not count
    assert http.put("/mode/payments-com.acme.Order", json={"mode": "IMPORT"}).status_code == 200
    refused = http.put("/mode/payments-value", json={"mode": "IMPORT"})
    assert refused.json()["error_code"] == 42205


# --------------------------------------------------------------------------- cost


def _basic(name: str) -> str:
    secret = service_token(scopes=["registry:write"], name=name).secret
    return "Basic " + base64.b64encode(f"{name}:{secret}".encode()).decode()


def _register(client: Client, auth: str, subject: str, document: dict):
    return client.post(
        f"/api/schema-registry/subjects/{subject}/versions",
        data=json.dumps({"schema": json.dumps(document), "schemaType": "JSON"}),
        content_type="application/vnd.schemaregistry.v1+json",
        HTTP_AUTHORIZATION=auth,
    )


@pytest.mark.django_db
def test_a_registration_costs_the_same_statements_however_many_subjects_exist():
    client, auth = Client(), _basic("orders")
    _register(client, auth, "warmup-value", V1)  # the token's first use is recorded once

    def costs():
        # schemas no subject has yet, as a new subject's or a new version's usually are
        topic, title = f"t{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        first, second = {**V1, "title": title}, {**V2_COMPATIBLE, "title": title}
        new_subject = queries_for(lambda: _register(client, auth, f"{topic}-value", first))
        new_version = queries_for(lambda: _register(client, auth, f"{topic}-value", second))
        return new_subject, new_version

    before = costs()
    for n in range(6):  # more topics, subjects and versions around
        _register(client, auth, f"more{n}-value", V1)
        _register(client, auth, f"more{n}-key", V2_COMPATIBLE)
    after = costs()
    assert before == after, f"{before} statements, then {after}"
    # docs/performance.md (registry) lists them: a new subject writes its topic row and
    # that row's audit entry, and reads no history, no consumers and no topic twice; a new
    # version reads the topic's consumers and its history to gate it, and moves the
    # topic's current version. A new subject is the cheaper of the two.
    new_subject, new_version = after
    assert new_subject <= 17 and new_version <= 19, after
    assert new_subject < new_version, after
    assert SchemaVersion.objects.filter(topic__name__startswith="t").count() == 4


# --------------------------------------------------------------------------- compatibility


@pytestmark_live
def test_compatibility_against_all_versions_checks_as_registering_would(live):
    new_client, http = live
    client = new_client()
    # given: v2 broke v1, registered under level NONE
    orders = services.service_ensure(actor=SYSTEM_ACTOR, name="orders")
    services.topic_create(actor=SYSTEM_ACTOR, name="payments", producers=[orders])
    client.register_schema("payments-value", schema(V1))
    client.set_compatibility("payments-value", "NONE")
    client.register_schema("payments-value", schema(V2_BREAKING))
    client.set_compatibility("payments-value", "BACKWARD")
    candidate = {**V2_BREAKING, "properties": {**V2_BREAKING["properties"], "n": {}}}
    body = {"schema": json.dumps(candidate), "schemaType": "JSON"}

    def against_all(**params):
        answer = http.post(
            "/compatibility/subjects/payments-value/versions", json=body, params=params
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    # then: BACKWARD checks the latest only, BACKWARD_TRANSITIVE every version
    assert against_all() == {"is_compatible": True}
    topic = Topic.objects.get(name="payments")
    schemas.set_mode(actor=SYSTEM_ACTOR, topic=topic, mode="BACKWARD_TRANSITIVE")
    verbose = against_all(verbose="true")
    assert verbose["is_compatible"] is False
    assert any(m.startswith("REQUIRED_ATTRIBUTE_ADDED") for m in verbose["messages"])
    # a subject with no version has nothing to be incompatible with; a bad schema is 42201
    # (verbose: an incompatible one, with why, as the reference answers it)
    fresh = http.post("/compatibility/subjects/fresh-value/versions", json=body)
    assert fresh.json() == {"is_compatible": True}
    bad = http.post("/compatibility/subjects/payments-value/versions", json={"schema": "{"})
    assert (bad.status_code, bad.json()["error_code"]) == (422, 42201)
    bad = http.post(
        "/compatibility/subjects/payments-value/versions",
        json={"schema": "{"},
        params={"verbose": "true"},
    )
    assert bad.json()["is_compatible"] is False and bad.json()["messages"]


# --------------------------------------------------------------------------- serializers


ORDER_AVRO = {
    "type": "record",
    "name": "Order",
    "namespace": "com.acme",
    "fields": [{"name": "id", "type": "string"}, {"name": "total", "type": "long"}],
}


@pytestmark_live
def test_unmodified_serializers_auto_register_and_a_breaking_one_hears_who_must_acknowledge(live):
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    new_client, http = live
    # given: serializers with their default configuration (auto.register.schemas on)
    json_context = SerializationContext("orders.json", MessageField.VALUE)
    serialize = JSONSerializer(json.dumps(V1), new_client())
    data = serialize({"id": "o-1", "total": 3}, json_context)
    # then: the first message registered the subject, and carries its id
    registered = new_client().get_latest_version("orders.json-value")
    assert int.from_bytes(data[1:5], "big") == registered.schema_id
    read = JSONDeserializer(None, schema_registry_client=new_client())(data, json_context)
    assert read == {"id": "o-1", "total": 3}
    avro_context = SerializationContext("orders.avro", MessageField.VALUE)
    data = AvroSerializer(new_client(), json.dumps(ORDER_AVRO))(
        {"id": "a", "total": 5}, avro_context
    )
    assert AvroDeserializer(new_client())(data, avro_context) == {"id": "a", "total": 5}
    # when: the topic has a consumer and a producer auto-registers a breaking schema
    Topic.objects.get(name="orders.avro").consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="ledger")
    )
    breaking = {**ORDER_AVRO, "fields": [*ORDER_AVRO["fields"], {"name": "tax", "type": "long"}]}
    with pytest.raises(SchemaRegistryError) as refused:
        AvroSerializer(new_client(), json.dumps(breaking))(
            {"id": "b", "total": 1, "tax": 0}, avro_context
        )
    # then: 409, naming the consumer still to acknowledge; the version waits
    assert refused.value.http_status_code == 409
    assert "ledger" in refused.value.error_message
    waiting = SchemaVersion.objects.get(topic__name="orders.avro", state="awaiting_acknowledgement")
    assert waiting.version == 2


# --------------------------------------------------------------------------- registry-wide


@pytest.mark.django_db
def test_an_operator_sets_and_resets_the_registry_wide_level_and_mode(client, operator):
    client.force_login(operator)
    base = "/api/schema-registry"

    def call(method, path, body=None):
        answer = getattr(client, method)(
            f"{base}{path}",
            data=json.dumps(body) if body is not None else None,
            content_type="application/json",
        )
        return answer.status_code, answer.json()

    assert call("put", "/config", {"compatibility": "FULL"}) == (200, {"compatibility": "FULL"})
    assert call("get", "/config") == (200, {"compatibilityLevel": "FULL"})
    assert call("delete", "/config") == (200, {"compatibilityLevel": "FULL"})
    assert call("get", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    # a subject's own mode gives way to READONLY_OVERRIDE set registry-wide
    auth = _basic("orders")
    assert _register(Client(), auth, "payments-value", V1).status_code == 200
    own = {"mode": "READWRITE"}  # its own, said outright
    assert call("put", "/mode/payments-value", own) == (200, own)
    assert call("put", "/mode", {"mode": "READONLY_OVERRIDE"})[0] == 200
    assert call("get", "/mode/payments-value") == (200, {"mode": "READONLY_OVERRIDE"})
    refused = _register(Client(), auth, "payments-value", V2_COMPATIBLE)
    assert (refused.status_code, refused.json()["error_code"]) == (422, 42205)
    assert call("delete", "/mode") == (200, {"mode": "READONLY_OVERRIDE"})
    assert call("get", "/mode/payments-value") == (200, own)
    assert _register(Client(), auth, "payments-value", V2_COMPATIBLE).status_code == 200
    assert call("get", "/mode") == (200, {"mode": "READWRITE"})
