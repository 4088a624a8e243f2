"""A version a consumer's reader schema names in its references is protected as one a
writer's schema references (issue 38): the Schema Registry API refuses to delete it,
soft or permanently, with 42206, until the reader is superseded or its service no longer
consumes the topic. `referencedby` still lists schema ids only: a reader has none.
Readers declared through Steward's API and ModelSync, deletions through the Schema
Registry API of a live Steward, over real PostgreSQL."""

import threading

import httpx
import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from apps.registry.models import ReaderSchema, SchemaVersion, Topic
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.test_reader_references import FORMATS, published_orders, reference, release
from tests.support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ADDRESS_V2 = "/subjects/address-value/versions/2"


@pytest.fixture
def shop(live_server):
    """The Schema Registry API as address's producer, who may delete its versions."""
    issued = service_token(scopes=["registry:write"], name="shop")
    base = f"{live_server.url}/api/schema-registry"
    with httpx.Client(base_url=base, auth=("shop", issued.secret), timeout=30) as http:
        yield http


def post_reader(consumer, release_name, version, status):
    """The consumer's reader of orders, using address-value's `version`, declared
    through Steward's API as the consumer itself; the answer's body."""
    issued = _tokens.get(consumer) or service_token(scopes=["registry:write"], name=consumer)
    _tokens[consumer] = issued
    body = {
        "release": release_name,
        "schema_type": "AVRO",
        "schema": FORMATS["AVRO"]["order"],
        "references": [reference("AVRO", version)],
    }
    answer = bearer(APIClient(), issued).post(
        "/api/v1/registry/topics/orders/readers/", body, format="json"
    )
    assert answer.status_code == status, answer.content
    return answer.json()


_tokens = {}


@pytest.fixture(autouse=True)
def _tokens_per_test():
    yield
    _tokens.clear()


def declare(consumer, release_name, version):
    return post_reader(consumer, release_name, version, 201)


def address_v2():
    return SchemaVersion.objects.get(topic__name="address", version=2)


def refused(answer, *words):
    assert (answer.status_code, answer.json()["error_code"]) == (422, 42206), answer.text
    assert answer.headers["content-type"].startswith("application/vnd.schemaregistry")
    message = answer.json()["message"]
    assert message.startswith("One or more references exist to the schema"), message
    for word in words:
        assert word in message, message


def test_a_version_a_reader_uses_cannot_be_deleted_until_the_reader_is_superseded(shop):
    # given: address-value v1 (which orders v1 references) and v2, which only ledger's
    # reader uses
    published_orders("AVRO")
    declare("ledger", "ledger-1", 2)

    # when / then: soft, permanent and subject deletion are all refused, naming the reader
    refused(shop.delete(ADDRESS_V2), "version=2", "reader schemas of ledger (ledger-1)")
    refused(shop.delete(ADDRESS_V2, params={"permanent": "true"}), "ledger (ledger-1)")
    refused(shop.delete("/subjects/address-value"))
    assert address_v2().deleted_at is None
    # referencedby answers schema ids, and a reader has none: it is not listed
    assert shop.get(f"{ADDRESS_V2}/referencedby").json() == []

    # when: ledger's next release reads Address as v1 has it
    declare("ledger", "ledger-2", 1)

    # then: v2 is free; the superseded declaration holds nothing
    assert shop.delete(ADDRESS_V2).json() == 2
    assert shop.delete(ADDRESS_V2, params={"permanent": "true"}).json() == 2
    assert not SchemaVersion.objects.filter(topic__name="address", version=2).exists()
    # and v1, which ledger-2 now uses, is held by both the writer and the reader
    refused(
        shop.delete("/subjects/address-value/versions/1"),
        "referenced by the schemas of ids",
        "used by the reader schemas of ledger (ledger-2)",
    )


@pytest.mark.parametrize("kind", ["JSON", "PROTOBUF"])
def test_a_reader_declared_by_model_sync_protects_what_it_references(shop, kind):
    published_orders(kind)
    read = {
        "topic": "orders",
        "schema_type": kind,
        "schema": FORMATS[kind]["order"],
        "references": [reference(kind, 2)],
    }
    [declared] = release("billing", "billing-1", reads=[read])["reads"]
    assert declared["outcome"] == "declared", declared

    refused(shop.delete(ADDRESS_V2), "billing (billing-1)")
    assert address_v2().deleted_at is None


def test_a_reader_of_a_service_that_no_longer_consumes_the_topic_holds_nothing(shop):
    published_orders("AVRO")
    declare("ledger", "ledger-1", 2)
    refused(shop.delete(ADDRESS_V2), "ledger (ledger-1)")
    # when: an operator takes ledger off the topic's consumers (the admin's form)
    Topic.objects.get(name="orders").consumers.remove(ReaderSchema.objects.get().service)
    # then: its reader is no longer in use
    assert shop.delete(ADDRESS_V2).json() == 2


def test_a_reader_declared_while_the_version_is_being_deleted_waits_and_is_refused(shop):
    """A declaration and a delete of what it names are serialised on the version's row,
    as a writer's registration and a delete are: the one that waits sees the other."""
    published_orders("AVRO")
    target = address_v2()
    # given: a delete of v2 under way, its row locked and changed, not yet committed
    deleting = connections.create_connection("default")
    deleting.set_autocommit(False)
    with deleting.cursor() as cursor:
        cursor.execute(
            "UPDATE registry_schemaversion SET deleted_at = now() WHERE id = %s", [target.pk]
        )
    answers = []

    def declaring():
        try:
            refused = post_reader("ledger", "ledger-1", 2, 422)
            answers.append((refused["code"], refused["field"]))
        finally:
            connection.close()

    # when: ledger declares a reader using v2 meanwhile
    thread = threading.Thread(target=declaring)
    thread.start()
    try:
        wait_for(_a_session_waits_on_a_lock)
    finally:
        deleting.commit()
        deleting.close()
    thread.join(timeout=30)

    # then: it waited for the delete, and found no live v2 to name
    assert answers == [("invalid_schema_reference", "references")]
    assert not ReaderSchema.objects.exists()


def _a_session_waits_on_a_lock():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return cursor.fetchone()[0] > 0
