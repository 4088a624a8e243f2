"""The Schema Registry API as a drop-in for the reference registry (issue 38, parts 1 and
3): the reference's answers where a client or a tool branches on them, the operator's
`registry:admin` grant for schema tooling, and data contracts kept with each version.
Driven by an unmodified confluent-kafka SchemaRegistryClient against a live Steward."""

import json
from contextlib import ExitStack

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.schema_registry_client import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
    ServerConfig,
)

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import SchemaVersion, Service, Topic
from apps.tenancy.models import AuditEvent
from tests.factories import service_token
from tests.registry.test_schemas import V1, V2_BREAKING, V2_COMPATIBLE

pytestmark = pytest.mark.django_db(transaction=True)

ADMIN = ["registry:write", "registry:admin"]


@pytest.fixture
def live(live_server):
    """`client(name, scopes)`: a new client (the library caches) for a service account
    of that name, made with a token of those scopes the first time; `http(name)`: the
    same account over plain HTTP."""
    base = f"{live_server.url}/api/schema-registry"
    secrets = {}
    with ExitStack() as stack:

        def credentials(name, scopes):
            if name not in secrets:
                secrets[name] = service_token(scopes=scopes, name=name).secret
            return name, secrets[name]

        def client(name="orders", scopes=("registry:write",)):
            auth = ":".join(credentials(name, scopes))
            return stack.enter_context(
                SchemaRegistryClient({"url": base, "basic.auth.user.info": auth})
            )

        def http(name="orders", scopes=("registry:write",)):
            auth = credentials(name, scopes)
            return stack.enter_context(httpx.Client(base_url=base, auth=auth, timeout=30))

        yield client, http


def schema(document, **extra):
    return Schema(json.dumps(document), "JSON", **extra)


def refused(call) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as caught:
        call()
    return caught.value


# --------------------------------------------------------------------------- 409 / 40901


def test_an_incompatible_schema_is_refused_40901_with_its_incompatibilities(live):
    client, _ = live
    registry = client()
    registry.register_schema("payments-value", schema(V1))
    # no consumer reads the subject: nothing waits, the schema is refused outright
    error = refused(lambda: registry.register_schema("payments-value", schema(V2_BREAKING)))
    assert (error.http_status_code, error.error_code) == (409, 40901)
    assert "is incompatible with an earlier schema" in error.error_message
    assert '"payments-value"' in error.error_message and "errorType" in error.error_message
    assert registry.get_versions("payments-value") == [1]
    assert SchemaVersion.objects.count() == 1  # nothing kept, nothing waiting
    # a compatible one is registered as before
    assert registry.register_schema("payments-value", schema(V2_COMPATIBLE)) > 0


def test_an_incompatible_schema_is_registered_when_the_level_allows_it(live):
    client, _ = live
    admin = client("tooling", ADMIN)
    admin.register_schema("payments-value", schema(V1))
    admin.set_compatibility("payments-value", "NONE")
    assert admin.register_schema("payments-value", schema(V2_BREAKING)) > 0
    assert admin.get_versions("payments-value") == [1, 2]


AVRO_V1 = {"type": "record", "name": "Payment", "fields": [{"name": "id", "type": "string"}]}


def test_a_schema_of_another_type_is_refused_40901_unless_the_level_is_none(live):
    client, _ = live
    admin = client("tooling", ADMIN)
    admin.register_schema("refunds-value", Schema(json.dumps(AVRO_V1), "AVRO"))
    error = refused(lambda: admin.register_schema("refunds-value", schema(V1)))
    assert (error.http_status_code, error.error_code) == (409, 40901)
    assert "different schema type: AVRO to JSON" in error.error_message
    assert admin.get_versions("refunds-value") == [1]
    admin.set_compatibility("refunds-value", "NONE")
    assert admin.register_schema("refunds-value", schema(V1)) > 0
    latest = admin.get_latest_version("refunds-value")
    assert (latest.version, latest.schema.schema_type) == (2, "JSON")


def test_a_schema_held_for_consumers_is_refused_naming_them_then_registers(live):
    client, _ = live
    registry = client()
    registry.register_schema("payments-value", schema(V1))
    billing = Service.objects.create(name="billing")
    Topic.objects.get(name="payments").consumers.add(billing)
    error = refused(lambda: registry.register_schema("payments-value", schema(V2_BREAKING)))
    assert (error.http_status_code, error.error_code) == (409, 40901)
    assert "waits for acknowledgement from its consumers: billing" in error.error_message
    waiting = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    schemas.acknowledge(actor=SYSTEM_ACTOR, version=waiting, consumer=billing)
    assert client().register_schema("payments-value", schema(V2_BREAKING)) == waiting.identity_id
    assert client().get_versions("payments-value") == [1, 2]


# --------------------------------------------------------------------------- registry:admin


def test_an_operator_grants_registry_admin_to_a_service_account_audited(live):
    client, _ = live
    client("tooling", ADMIN)  # the token issued, as an operator issues it
    with system_scope():
        grant = AuditEvent.objects.get(action="api_token.issue", object_repr__contains="tooling")
    assert "registry:admin" in grant.changes["scopes"][1]
    admin = client("tooling", ADMIN)
    assert admin.set_compatibility(level="FULL") == {"compatibility": "FULL"}
    assert admin.set_compatibility("payments-value", "NONE") == {"compatibility": "NONE"}
    assert admin.get_compatibility() == "FULL"
    assert admin.get_compatibility("payments-value") == "NONE"
    with system_scope():
        changes = AuditEvent.objects.filter(actor_service__name="tooling")
        actions = set(changes.values_list("action", flat=True))
    assert {"registry.compatibility", "topic.compatibility"} <= actions
    assert admin.delete_config() is not None
    assert admin.get_compatibility() == "BACKWARD"


def test_registry_admin_manages_modes_ordinary_services_get_40301(live):
    _, http = live
    admin, ordinary = http("tooling", ADMIN), http()
    for path in ("/mode", "/mode/payments-value", "/config", "/config/payments-value"):
        body = {"mode": "READONLY"} if path.startswith("/mode") else {"compatibility": "FULL"}
        answer = ordinary.put(path, json=body)
        assert (answer.status_code, answer.json()["error_code"]) == (403, 40301), path
        assert admin.put(path, json=body).status_code == 200, path
    for path in ("/mode/payments-value", "/config/payments-value", "/mode", "/config"):
        answer = ordinary.delete(path)
        assert (answer.status_code, answer.json()["error_code"]) == (403, 40301), path
        assert admin.delete(path).status_code == 200, path
    assert admin.get("/mode").json() == {"mode": "READWRITE"}


# --------------------------------------------------------------------------- config and mode


def test_a_subject_without_its_own_level_or_mode_answers_40408_and_40409(live):
    client, http = live
    registry, calls = client(), http()
    registry.register_schema("payments-value", schema(V1))
    error = refused(lambda: registry.get_compatibility("payments-value"))
    assert (error.http_status_code, error.error_code) == (404, 40408)
    assert error.error_message == (
        "Subject 'payments-value' does not have subject-level compatibility configured"
    )
    error = refused(lambda: registry.get_mode("payments-value"))
    assert (error.http_status_code, error.error_code) == (404, 40409)
    params = {"defaultToGlobal": "true"}
    answer = calls.get("/config/payments-value", params=params)
    assert answer.json() == {"compatibilityLevel": "BACKWARD"}
    assert calls.get("/mode/payments-value", params=params).json() == {"mode": "READWRITE"}


def test_a_level_is_set_before_the_first_schema_and_per_subject(live):
    client, _ = live
    admin = client("tooling", ADMIN)
    # no schema under either subject yet: accepted, as the reference accepts it
    assert admin.set_compatibility("orders-value", "FULL") == {"compatibility": "FULL"}
    assert admin.set_compatibility("orders-key", "NONE") == {"compatibility": "NONE"}
    assert admin.get_compatibility("orders-value") == "FULL"
    assert admin.get_compatibility("orders-key") == "NONE"
    # setting one subject's level leaves its topic's other subject alone
    admin.set_compatibility("orders-value", "BACKWARD_TRANSITIVE")
    assert admin.get_compatibility("orders-key") == "NONE"
    admin.register_schema("orders-key", schema(V1))
    assert admin.register_schema("orders-key", schema(V2_BREAKING)) > 0  # NONE lets it in
    admin.register_schema("orders-value", schema(V1))
    error = refused(lambda: admin.register_schema("orders-value", schema(V2_BREAKING)))
    assert error.error_code == 40901
    assert admin.delete_config("orders-key").compatibility_level.value == "NONE"
    assert refused(lambda: admin.get_compatibility("orders-key")).error_code == 40408


# --------------------------------------------------------------------------- listing filters


def test_subject_prefix_deleted_only_and_lookup_of_deleted_versions(live):
    client, http = live
    registry = client()
    for name in ("payments-value", "payments-key", "orders-value"):
        registry.register_schema(name, schema(V1))
    assert registry.get_subjects(subject_prefix="payments") == ["payments-key", "payments-value"]
    registry.delete_subject("payments-key")
    registry.register_schema("orders-value", schema(V2_COMPATIBLE))
    registry.delete_version("orders-value", 1)
    assert registry.get_subjects(deleted_only=True) == ["payments-key"]
    assert http().get("/subjects", params={"deletedOnly": "true"}).json() == ["payments-key"]
    assert registry.get_versions("orders-value", deleted_only=True) == [1]
    assert registry.get_versions("orders-value", deleted=True) == [1, 2]
    assert refused(lambda: registry.lookup_schema("orders-value", schema(V1))).error_code == 40403
    found = client().lookup_schema("orders-value", schema(V1), deleted=True)
    assert found.version == 1
    found = client().lookup_schema("payments-key", schema(V1), deleted=True)
    assert found.version == 1


def test_the_schema_list_takes_deleted_latest_only_offset_and_limit(live):
    client, http = live
    registry = client()
    registry.register_schema("payments-value", schema(V1))
    registry.register_schema("payments-value", schema(V2_COMPATIBLE))
    registry.register_schema("orders-value", schema(V1))
    registry.delete_version("orders-value", 1)

    def listed(**params):
        answer = http().get("/schemas", params=params)
        assert answer.status_code == 200, answer.text
        return [(r["subject"], r["version"]) for r in answer.json()]

    assert listed() == [("payments-value", 1), ("payments-value", 2)]
    assert listed(deleted="true") == [
        ("orders-value", 1),
        ("payments-value", 1),
        ("payments-value", 2),
    ]
    assert listed(latestOnly="true") == [("payments-value", 2)]
    assert listed(deleted="true", latestOnly="true") == [("orders-value", 1), ("payments-value", 2)]
    assert listed(deleted="true", offset="1", limit="1") == [("payments-value", 1)]
    assert listed(offset="1") == [("payments-value", 2)]
    bad = http().get("/schemas", params={"limit": "many"})
    assert (bad.status_code, bad.json()["error_code"]) == (400, 400)


# --------------------------------------------------------------------------- compatibility


def test_compatibility_of_a_missing_subject_an_invalid_schema_and_another_type(live):
    client, http = live
    registry, calls = client(), http()
    assert registry.test_compatibility("nothing-value", schema(V1)) is True
    assert registry.test_compatibility_all_versions("nothing-value", schema(V1)) is True
    answer = calls.post(
        "/compatibility/subjects/nothing-value/versions/latest",
        params={"verbose": "true"},
        json={"schema": '{"type": 12}', "schemaType": "JSON"},
    )
    assert answer.status_code == 200
    assert answer.json()["is_compatible"] is False and answer.json()["messages"]
    avro = {"type": "record", "name": "Payment", "fields": [{"name": "id", "type": "string"}]}
    registry.register_schema("payments-value", Schema(json.dumps(avro), "AVRO"))
    assert registry.test_compatibility("payments-value", schema(V1)) is False
    answer = calls.post(
        "/compatibility/subjects/payments-value/versions",
        params={"verbose": "true"},
        json={"schema": json.dumps(V1), "schemaType": "JSON"},
    )
    assert answer.json()["is_compatible"] is False
    assert "different schema type" in answer.json()["messages"][0]


# --------------------------------------------------------------------------- subject names


@pytest.mark.parametrize(
    "subject", [":.staging:orders-value", "orders value", "team/orders", "Zahlungen-Wert"]
)
def test_any_name_the_reference_accepts_is_a_subject(live, subject):
    client, _ = live
    registry = client()
    schema_id = registry.register_schema(subject, schema(V1))
    assert subject in registry.get_subjects()
    assert registry.get_latest_version(subject).schema_id == schema_id
    assert client().get_versions(subject) == [1]
    if subject.startswith(":.staging:"):
        assert client().get_contexts() == [".", ".staging"]


def test_a_subject_with_a_control_character_is_refused_42208(live):
    client, _ = live
    error = refused(lambda: client().register_schema("orders\x07-value", schema(V1)))
    assert (error.http_status_code, error.error_code) == (422, 42208)
    assert error.error_message == "The specified subject 'orders\x07-value' is not a valid."


# --------------------------------------------------------------------------- references


def test_a_soft_deleted_referrer_is_not_listed_nor_blocks_deletion(live):
    client, http = live
    registry = client()
    address = {"type": "object", "properties": {"street": {"type": "string"}}}
    order = {"type": "object", "properties": {"ship_to": {"$ref": "address.json"}}}
    registry.register_schema("address-value", schema(address))
    reference = SchemaReference("address.json", "address-value", 1)
    order_id = registry.register_schema("order-value", schema(order, references=[reference]))
    referencedby = "/subjects/address-value/versions/1/referencedby"
    assert http().get(referencedby).json() == [order_id]
    registry.delete_subject("order-value")
    assert http().get(referencedby).json() == []
    assert registry.delete_subject("address-value") == [1]


# --------------------------------------------------------------------------- content types


def test_answers_are_the_registrys_media_type_and_requests_may_be_any_of_three(live):
    client, http = live
    client().register_schema("payments-value", schema(V1))
    calls = http()
    for media in (
        "application/vnd.schemaregistry.v1+json",
        "application/vnd.schemaregistry+json",
        "application/json",
    ):
        answer = calls.post(
            "/subjects/payments-value",
            content=json.dumps({"schema": json.dumps(V1), "schemaType": "JSON"}),
            headers={"Content-Type": media},
        )
        assert answer.status_code == 200, media
        assert answer.headers["content-type"] == "application/vnd.schemaregistry.v1+json"
    missing = calls.get("/subjects/nothing-value/versions")
    assert missing.headers["content-type"] == "application/vnd.schemaregistry.v1+json"
    raw = calls.get("/subjects/payments-value/versions/1/schema")
    assert raw.headers["content-type"] == "application/vnd.schemaregistry.v1+json"


# --------------------------------------------------------------------------- data contracts


def _rules(*names, expr="message.total > 0"):
    return RuleSet(
        migration_rules=None,
        domain_rules=[
            Rule(
                name=name,
                doc=None,
                kind=RuleKind.CONDITION,
                mode=RuleMode.WRITE,
                type="CEL",
                tags=None,
                params=None,
                expr=expr,
                on_success=None,
                on_failure="ERROR",
                disabled=None,
            )
            for name in names
        ],
    )


def _metadata(**properties):
    return Metadata(
        tags=MetadataTags({"$.total": ["PII"]}),
        properties=MetadataProperties(properties),
        sensitive=["total"],
    )


def test_metadata_and_rules_are_kept_per_version_and_answered(live):
    client, http = live
    registry = client()
    sent = schema(V1, metadata=_metadata(owner="orders"), rule_set=_rules("checkTotal"))
    schema_id = registry.register_schema("payments-value", sent)
    latest = client().get_latest_version("payments-value")
    assert latest.schema.metadata.properties.properties == {"owner": "orders"}
    assert [r.name for r in latest.schema.rule_set.domain_rules] == ["checkTotal"]
    by_id = http().get(f"/schemas/ids/{schema_id}").json()
    assert by_id["metadata"]["sensitive"] == ["total"]
    assert by_id["ruleSet"]["domainRules"][0]["expr"] == "message.total > 0"
    found = http().post("/subjects/payments-value", json=sent.to_dict()).json()
    assert found["ruleSet"]["domainRules"][0]["name"] == "checkTotal"
    # the same schema and contract again: the same version
    assert client().register_schema("payments-value", sent) == schema_id
    # without a contract, the latest version's is inherited: still the same version
    assert client().register_schema("payments-value", schema(V1)) == schema_id
    # the same schema with another contract: a new version, with its own id
    other = schema(V1, metadata=_metadata(owner="billing"), rule_set=_rules("checkTotal"))
    other_id = client().register_schema("payments-value", other)
    assert other_id != schema_id
    assert client().get_versions("payments-value") == [1, 2]


def test_the_latest_version_with_metadata_is_found_by_its_properties(live):
    """GET /subjects/{subject}/metadata (the client's get_latest_with_metadata, which a
    serializer configured with `use.latest.with.metadata` calls): the latest version
    whose metadata has every property asked; 40403 when none has, 40401 for a subject
    with no version; soft-deleted versions only with `deleted`."""
    client, http = live
    registry = client()
    first = registry.register_schema(
        "payments-value", schema(V1, metadata=_metadata(app="v1", tier="gold"))
    )
    second = registry.register_schema(
        "payments-value", schema(V2_COMPATIBLE, metadata=_metadata(app="v2", tier="gold"))
    )

    def latest(**properties):
        return client().get_latest_with_metadata("payments-value", properties)

    assert (latest(app="v1").schema_id, latest(app="v1").version) == (first, 1)
    assert (latest(tier="gold").schema_id, latest(tier="gold").version) == (second, 2)
    assert latest(app="v1", tier="gold").version == 1
    assert latest(app="v1").schema.metadata.properties.properties == {"app": "v1", "tier": "gold"}
    assert refused(lambda: latest(app="v3")).error_code == 40403
    assert refused(lambda: latest(app="v1", tier="silver")).error_code == 40403
    missing = refused(lambda: client().get_latest_with_metadata("nothing-value", {"a": "b"}))
    assert missing.error_code == 40401
    # a soft-deleted version is found only when deleted ones are asked for
    registry.delete_version("payments-value", 1)
    assert refused(lambda: latest(app="v1")).error_code == 40403
    also_deleted = client().get_latest_with_metadata("payments-value", {"app": "v1"}, deleted=True)
    assert also_deleted.version == 1
    # a key sent without its value is not asked for (the reference pairs them in order)
    answer = http().get("/subjects/payments-value/metadata", params={"key": ["app", "tier"]})
    assert answer.status_code == 200 and answer.json()["version"] == 2
    # a serializer told to write with the latest version that has app=v2 takes its id
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    conf = {"auto.register.schemas": False, "use.latest.with.metadata": {"app": "v2"}}
    serialize = JSONSerializer(json.dumps(V1), client(), conf=conf)
    data = serialize(
        {"id": "p-1", "total": 3}, SerializationContext("payments", MessageField.VALUE)
    )
    assert int.from_bytes(data[1:5], "big") == second


def test_config_defaults_and_overrides_apply_on_registration(live):
    client, http = live
    admin = client("tooling", ADMIN)
    config = ServerConfig(
        default_metadata=_metadata(owner="platform", tier="gold"),
        override_rule_set=_rules("mustHaveId", expr="has(message.id)"),
    )
    admin.set_config("payments-value", config)
    answer = http("tooling", ADMIN).get("/config/payments-value").json()
    assert answer["defaultMetadata"]["properties"] == {"owner": "platform", "tier": "gold"}
    assert answer["overrideRuleSet"]["domainRules"][0]["name"] == "mustHaveId"
    admin.register_schema(
        "payments-value",
        schema(V1, metadata=_metadata(owner="payments"), rule_set=_rules("checkTotal")),
    )
    kept = SchemaVersion.objects.get(topic__name="payments")
    # the request's metadata laid over the default; the override's rule after the request's
    assert kept.metadata["properties"] == {"owner": "payments", "tier": "gold"}
    assert [r["name"] for r in kept.rule_set["domainRules"]] == ["checkTotal", "mustHaveId"]
    # the subject's own settings, not its topic's other subject's
    assert refused(lambda: admin.get_config("payments-key")).error_code == 40408


def test_a_version_whose_rules_change_is_announced_and_shown(live, client, operator):
    live_client, _ = live
    registry = live_client()
    services.topic_create(actor=SYSTEM_ACTOR, name="payments")
    registry.register_schema("payments-value", schema(V1, rule_set=_rules("checkTotal")))
    registry.register_schema("payments-value", schema(V1, rule_set=_rules("checkTotal", "other")))
    with system_scope():
        published = [
            event.payload
            for event in OutboxEvent.objects.filter(
                topic="registry.schema", event_type="SchemaVersionPublished"
            ).order_by("id")
        ]
    assert [p.get("rules_changed") for p in published] == [None, True]
    assert [r["name"] for r in published[1]["ruleSet"]["domainRules"]] == ["checkTotal", "other"]
    # the console's version page shows the rules, and that they changed
    client.force_login(operator)
    version = SchemaVersion.objects.get(topic__name="payments", version=2)
    page = client.get(version.get_absolute_url()).content.decode()
    assert 'id="contract-rules"' in page and "checkTotal" in page and "other" in page
    assert "The rules changed since v1." in page
