"""Data contracts in a release's ModelSync (issue 38 §3, gap 1): a release that declares a
schema's `metadata` and `ruleSet` keeps them on the version exactly as a registration
through the Schema Registry API keeps them (inherited, laid over the config's defaults
and under its overrides, part of the schema's identity), and its answer says them."""

import pytest
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.registry import versions
from apps.registry.models import ModelSync, SchemaVersion, Topic
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.test_schemas import V1

pytestmark = pytest.mark.django_db(transaction=True)

SYNC_URL = "/api/v1/registry/model-sync/"
METADATA = {"properties": {"owner": "orders"}, "tags": {"$.total": ["PII"]}}
RULES = {
    "domainRules": [
        {"name": "checkTotal", "kind": "CONDITION", "type": "CEL", "expr": "message.total > 0"}
    ]
}


def releasing():
    return bearer(
        APIClient(), service_token(scopes=["registry:read", "registry:write"], name="shop")
    )


def model_sync(client, release, **entry):
    topic = {"name": "payments", "schema": V1, **entry}
    return client.post(SYNC_URL, {"release": release, "topics": [topic]}, format="json")


def test_a_release_keeps_its_contract_on_the_version_and_answers_it(live):
    _, http = live
    client = releasing()
    # when
    answer = model_sync(
        client,
        "r1",
        metadata=METADATA,
        ruleSet=RULES,
        key={"schema": {"type": "string"}, "metadata": {"properties": {"k": "v"}}},
    )
    # then
    assert answer.status_code == 200, answer.content
    [topic] = answer.json()["topics"]
    assert (topic["outcome"], topic["metadata"], topic["ruleSet"]) == ("published", METADATA, RULES)
    assert topic["key"]["metadata"] == {"properties": {"k": "v"}}
    assert "ruleSet" not in topic["key"]
    value = SchemaVersion.objects.get(topic__name="payments", role="value")
    assert (value.metadata, value.rule_set) == (METADATA, RULES)
    # the Schema Registry API serves it with the version, and a registration of the same
    # schema and contract is that version, with its id: one identity for both paths
    served = http.get("/subjects/payments-value/versions/1").json()
    assert (served["metadata"], served["ruleSet"]) == (METADATA, RULES)
    same = {"schemaType": "JSON", "schema": served["schema"], "metadata": METADATA}
    registered = http.post("/subjects/payments-value", json={**same, "ruleSet": RULES})
    assert registered.json()["id"] == value.identity_id


def test_a_contract_is_part_of_the_schemas_identity_in_a_release(live):
    _, http = live
    client = releasing()
    first = model_sync(client, "r1", metadata=METADATA, ruleSet=RULES).json()["topics"][0]
    # a release without a contract inherits the latest version's: the same version
    again = model_sync(client, "r2").json()["topics"][0]
    assert (again["outcome"], again["version"], again["ruleSet"]) == ("unchanged", 1, RULES)
    # the same schema with other rules is a new version, with its own id
    other = {"domainRules": [{**RULES["domainRules"][0], "expr": "message.total >= 0"}]}
    changed = model_sync(client, "r3", metadata=METADATA, ruleSet=other).json()["topics"][0]
    assert (changed["outcome"], changed["version"], changed["ruleSet"]) == ("published", 2, other)
    assert changed["fingerprint"] == first["fingerprint"]
    ids = list(
        SchemaVersion.objects.filter(topic__name="payments")
        .order_by("version")
        .values_list("identity_id", flat=True)
    )
    assert len(set(ids)) == 2
    # and the Schema Registry API answers the two as two schemas
    assert http.get("/subjects/payments-value/versions").json() == [1, 2]


def test_a_release_lays_its_contract_over_the_subjects_defaults_and_under_its_overrides(db):
    client = releasing()
    model_sync(client, "r0")
    versions.set_contract_config(
        actor=SYSTEM_ACTOR,
        topic=Topic.objects.get(name="payments"),
        values={
            "defaultMetadata": {"properties": {"owner": "platform", "tier": "gold"}},
            "overrideRuleSet": {"domainRules": [{"name": "mustHaveId", "expr": "has(id)"}]},
        },
    )
    # when
    answer = model_sync(client, "r1", metadata=METADATA, ruleSet=RULES).json()["topics"][0]
    # then: as the Schema Registry API lays a registration's
    assert answer["metadata"]["properties"] == {"owner": "orders", "tier": "gold"}
    assert [r["name"] for r in answer["ruleSet"]["domainRules"]] == ["checkTotal", "mustHaveId"]
    kept = SchemaVersion.objects.get(topic__name="payments", version=2)
    assert (kept.metadata, kept.rule_set) == (answer["metadata"], answer["ruleSet"])


def test_a_release_is_held_to_the_subjects_validate_fields_and_compatibility_group(db):
    """The config's `validateFields` and `compatibilityGroup` apply to a release as to a
    registration: a field its metadata reserves refuses it (whatever the level); a
    schema breaking group 1's version is judged in group 2 against nothing."""
    client = releasing()
    model_sync(client, "r0", metadata={"properties": {"major": "1"}})
    versions.set_contract_config(
        actor=SYSTEM_ACTOR,
        topic=Topic.objects.get(name="payments"),
        values={"validateFields": True, "compatibilityGroup": "major"},
    )
    reserved = {"properties": {"major": "1", "confluent:reserved": "total"}}
    # when
    answer = model_sync(client, "r1", metadata=reserved).json()["topics"][0]
    # then
    assert answer["outcome"] == "refused"
    assert "conflicts with the reserved field total" in answer["reason"]
    breaking = {**V1, "properties": {**V1["properties"], "id": {"type": "integer"}}}
    grouped = model_sync(client, "r2", schema=breaking, metadata={"properties": {"major": "2"}})
    [topic] = grouped.json()["topics"]
    # judged against no version: group 1's is not looked at
    assert (topic["outcome"], topic["verdict"]["compatible"]) == ("published", True)
    assert topic["verdict"]["differences"] == []


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"metadata": {"properties": {"owner": 1}}}, "topics[0].metadata"),
        ({"ruleSet": {"domainRules": [{"kind": "CONDITION"}]}}, "topics[0].ruleSet"),
        (
            {
                "key": {
                    "schema": {"type": "string"},
                    "ruleSet": {"migrationRules": [{"name": "a", "mode": "SOMETIMES"}]},
                }
            },  # noqa: E501
            "topics[0].key.ruleSet",
        ),
    ],
)
def test_a_malformed_contract_refuses_the_release_before_anything_is_written(db, entry, field):
    answer = model_sync(releasing(), "r1", **entry)
    assert answer.status_code == 400, answer.content
    problem = answer.json()
    assert (problem["code"], problem["field"]) == ("invalid_data_contract", field)
    assert not Topic.objects.filter(name="payments").exists()
    assert not ModelSync.objects.exists()
