"""Reader schemas that use other subjects' versions (issue 38, gap 2): a consumer's
declared reader takes `references` as a writer's schema does (an Avro named type another
subject defines, a Protobuf import, a JSON Schema `$ref`), resolved the one way writers'
are, and is judged with what they name."""

import pytest
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.registry import versions as schemas
from apps.registry.models import ReaderSchema, Service
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.test_confluent_references import AVRO_ADDRESS, AVRO_ORDER

pytestmark = pytest.mark.django_db

# Per format: address-value v1 and v2 (what changes between them breaks a reader of v2
# that reads data written with v1), and an Order using Address by reference, as its
# writer and as its readers write it. The reference's name is how the format names it.
NOTE = {"name": "note", "type": ["null", "string"], "default": None}
FORMATS = {
    "AVRO": {
        "name": "com.acme.Address",
        "address": [
            AVRO_ADDRESS,
            {
                **AVRO_ADDRESS,
                "fields": [*AVRO_ADDRESS["fields"], {"name": "zip", "type": "string"}],
            },
        ],
        "order": AVRO_ORDER,
        # the writer's next version: a field with a default added, which the level passes
        "order_v2": {**AVRO_ORDER, "fields": [*AVRO_ORDER["fields"], NOTE]},
        "broken_at": "/fields/1/type/fields/1",
    },
    "JSON": {
        "name": "address.json",
        "address": [
            {"type": "object", "properties": {"street": {"type": "string"}}},
            {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["zip"],
            },
        ],
        "order": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "ship_to": {"$ref": "address.json"}},
        },
        "order_v2": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "ship_to": {"$ref": "address.json"},
                "note": {},
            },
        },
        "broken_at": "ship_to",
    },
    "PROTOBUF": {
        "name": "address.proto",
        "address": [
            'syntax = "proto3";\npackage acme;\nmessage Address { string street = 1; }\n',
            'syntax = "proto3";\npackage acme;\nmessage Address { int32 street = 1; }\n',
        ],
        "order": 'syntax = "proto3";\npackage acme;\nimport "address.proto";\n'
        "message Order { string id = 1; Address ship_to = 2; }\n",
        "order_v2": 'syntax = "proto3";\npackage acme;\nimport "address.proto";\n'
        "message Order { string id = 1; Address ship_to = 2; string note = 3; }\n",
        "broken_at": "#/Order/2/1",
    },
}


def release(service, name, topics=(), reads=()):
    account = Service.objects.get_or_create(name=service)[0]
    return schemas.model_sync(
        actor=SYSTEM_ACTOR,
        service=account,
        release=name,
        topics=list(topics),
        reads=list(reads) or None,
    )


def reference(kind, version):
    return {"name": FORMATS[kind]["name"], "subject": "address-value", "version": version}


def published_orders(kind):
    """address-value v1 and v2 (no consumer holds the second), and orders v1 using
    Address v1, consumed by billing and ledger."""
    spec = FORMATS[kind]
    for n, address in enumerate(spec["address"], 1):
        entry = {"name": "address", "schema_type": kind, "schema": address}
        release("shop", f"address-{n}", [{**entry, "producers": ["shop"]}])
    answer = release(
        "shop",
        "orders-1",
        [
            {
                "name": "orders",
                "schema_type": kind,
                "schema": spec["order"],
                "references": [reference(kind, 1)],
                "consumers": ["billing", "ledger"],
            }
        ],
    )
    assert answer["topics"][0]["outcome"] == "published", answer


@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_reader_using_another_subjects_type_is_judged_with_it(kind):
    spec = FORMATS[kind]
    published_orders(kind)
    # when: billing reads Address as v1 has it, ledger as v2 has it
    for consumer, version in (("billing", 1), ("ledger", 2)):
        read = {
            "topic": "orders",
            "schema_type": kind,
            "schema": spec["order"],
            "references": [reference(kind, version)],
        }
        [declared] = release(consumer, f"{consumer}-1", reads=[read])["reads"]
        assert declared["outcome"] == "declared", declared
        assert declared["references"] == [reference(kind, version)]
    # then: the reader is kept bundled with what it references, standing alone
    ledger = ReaderSchema.objects.get(service__name="ledger")
    assert ledger.references == [reference(kind, 2)]
    # and a version the level passes waits for ledger alone, whose Address cannot read
    # what the writer's Address (v1) writes
    answer = release(
        "shop",
        "orders-2",
        [
            {
                "name": "orders",
                "schema_type": kind,
                "schema": spec["order_v2"],
                "references": [reference(kind, 1)],
            }
        ],
    )["topics"][0]
    assert (answer["outcome"], answer["awaiting"], answer["reads_it"]) == (
        "awaiting_acknowledgement",
        ["ledger"],
        ["billing"],
    )
    breaking = answer["verdict"]["readers"]["ledger"]["breaking"]
    assert breaking and any(spec["broken_at"] in d["path"] for d in breaking), breaking


@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_reader_whose_import_or_type_has_no_reference_is_still_rejected(kind):
    published_orders(kind)
    read = {"topic": "orders", "schema_type": kind, "schema": FORMATS[kind]["order"]}
    [answer] = release("billing", "billing-1", reads=[read])["reads"]
    assert (answer["outcome"], answer["code"]) == ("rejected", "invalid_reader_schema")


def test_a_reference_naming_no_version_rejects_the_reader_with_its_code():
    published_orders("AVRO")
    read = {
        "topic": "orders",
        "schema_type": "AVRO",
        "schema": FORMATS["AVRO"]["order"],
        "references": [reference("AVRO", 9)],
    }
    [answer] = release("billing", "billing-1", reads=[read])["reads"]
    assert (answer["outcome"], answer["code"]) == ("rejected", "invalid_schema_reference")
    assert "address-value" in answer["reason"]
    assert not ReaderSchema.objects.exists()


def test_the_api_declares_a_reader_with_references_and_answers_them():
    published_orders("PROTOBUF")
    client = bearer(APIClient(), service_token(scopes=["registry:write"], name="billing"))
    url = "/api/v1/registry/topics/orders/readers/"
    body = {
        "release": "billing-7",
        "schema_type": "PROTOBUF",
        "schema": FORMATS["PROTOBUF"]["order"],
        "references": [reference("PROTOBUF", 1)],
    }
    answer = client.post(url, body, format="json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["reader"]["references"] == [reference("PROTOBUF", 1)]
    listed = client.get(url).json()
    assert [r["references"] for r in listed] == [[reference("PROTOBUF", 1)]]
    # a reference naming nothing: 422 with its code, nothing declared
    refused = client.post(
        url,
        {**body, "release": "billing-8", "references": [reference("PROTOBUF", 5)]},
        format="json",
    )
    assert refused.status_code == 422, refused.content
    assert (refused.json()["code"], refused.json()["field"]) == (
        "invalid_schema_reference",
        "references",
    )
    assert ReaderSchema.objects.count() == 1
