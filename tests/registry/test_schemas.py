"""ModelSync and the consumer-acknowledgement gate for breaking schema versions
(apps.registry.versions)."""

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope
from apps.registry import versions as schemas
from apps.registry.catalog import install_steward_topics
from apps.registry.models import SchemaVersion, Topic
from apps.registry.selectors import missing_acknowledgements, resolve_topic
from apps.tenancy.models import AuditEvent
from tests.registry.factories import (
    V1,
    V2_BREAKING,
    V2_COMPATIBLE,
    consumer,
    events,
    outcome,
    pending,
    sync,
)
from tests.support import run_concurrently


@pytest.mark.django_db
def test_a_first_version_publishes_and_the_same_sync_again_answers_the_same():
    first = sync("r1", V1)
    assert outcome(first)["outcome"] == "published" and outcome(first)["version"] == 1
    assert sync("r1", V1) == first
    assert SchemaVersion.objects.count() == 1
    assert outcome(sync("r2", V1))["outcome"] == "unchanged"
    assert sorted(
        Topic.objects.get(name="orders.order").consumers.values_list("name", flat=True)
    ) == [
        "billing",
        "ledger",
    ]


@pytest.mark.django_db
def test_a_release_id_reused_for_another_model_is_refused():
    sync("r1", V1)
    with pytest.raises(Conflict):
        sync("r1", V2_COMPATIBLE)


@pytest.mark.django_db
def test_a_compatible_version_is_published_at_once_and_producers_see_it():
    sync("r1", V1)
    assert resolve_topic("orders.order").schema_version == 1
    answer = outcome(sync("r2", V2_COMPATIBLE))
    assert answer["outcome"] == "published" and answer["version"] == 2
    assert resolve_topic("orders.order").schema_version == 2
    [published] = events("SchemaVersionPublished")[-1:]
    assert published["version"] == 2 and published["verdict"]["compatible"] is True


@pytest.mark.django_db
def test_a_breaking_version_waits_for_every_consumer_then_publishes_once():
    sync("r1", V1)
    answer = outcome(sync("r2", V2_BREAKING))
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert answer["awaiting"] == ["billing", "ledger"]
    assert any(d["kind"] for d in answer["verdict"]["breaking"])
    assert resolve_topic("orders.order").schema_version == 1
    [waiting] = events("SchemaVersionAwaitingAcknowledgement")
    assert waiting["awaiting"] == ["billing", "ledger"]

    version = schemas.acknowledge(
        actor=SYSTEM_ACTOR, version=pending(), consumer=consumer("billing")
    )
    assert version.state == "awaiting_acknowledgement"
    assert outcome(sync("r3", V2_BREAKING))["awaiting"] == ["ledger"]  # the same version
    version = schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("ledger"))
    assert version.state == "published" and version.published_at is not None
    assert resolve_topic("orders.order").schema_version == 2
    assert [e["version"] for e in events("SchemaVersionPublished")] == [1, 2]


@pytest.mark.django_db
def test_a_withdrawn_acknowledgement_holds_publication():
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    version = pending()
    schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("billing"))
    schemas.withdraw_acknowledgement(
        actor=SYSTEM_ACTOR, version=version, consumer=consumer("billing")
    )
    version = schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("ledger"))
    assert version.state == "awaiting_acknowledgement"
    assert missing_acknowledgements(version) == ["billing"]


@pytest.mark.django_db
def test_an_operator_override_publishes_with_its_reason_in_the_audit_trail():
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    with pytest.raises(ValidationFailed):
        schemas.override(actor=SYSTEM_ACTOR, version=pending(), reason=" ")
    version = schemas.override(actor=SYSTEM_ACTOR, version=pending(), reason="ledger is retired")
    assert version.state == "published" and version.override_reason == "ledger is retired"
    with system_scope():
        audit = AuditEvent.objects.get(action="schema_version.override")
    assert audit.changes["missing"][0] == ["billing", "ledger"]
    assert events("SchemaVersionPublished")[-1]["override_reason"] == "ledger is retired"


@pytest.mark.django_db
def test_an_invalid_schema_rejects_its_topic_only():
    answer = sync(
        "r1",
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
        extra=[{"name": "orders.line", "schema": V1}],
    )
    rejected = outcome(answer)
    assert rejected["outcome"] == "rejected" and "ref" in rejected["reason"].lower()
    assert outcome(answer, "orders.line")["outcome"] == "published"
    assert not SchemaVersion.objects.filter(topic__name="orders.order").exists()


@pytest.mark.django_db(transaction=True)
def test_the_last_two_acknowledgements_arriving_together_publish_exactly_once():
    install_steward_topics()
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    version = pending()

    def acknowledge(names=iter(["billing", "ledger"])):
        return schemas.acknowledge(
            actor=SYSTEM_ACTOR, version=version, consumer=consumer(next(names))
        )

    _, errors = run_concurrently(acknowledge, 2)
    assert errors == []
    assert [e["version"] for e in events("SchemaVersionPublished")] == [1, 2]


@pytest.mark.django_db
def test_producers_and_consumers_a_sync_no_longer_names_are_reported_not_removed():
    sync("r1", V1, consumers=("billing", "ledger"))
    answer = outcome(sync("r2", V2_COMPATIBLE, consumers=("billing",)))
    assert answer["not_named"] == {"producers": [], "consumers": ["ledger"]}
    topic = Topic.objects.get(name="orders.order")
    assert sorted(topic.consumers.values_list("name", flat=True)) == ["billing", "ledger"]
