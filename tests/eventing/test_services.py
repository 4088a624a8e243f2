"""Eventing's writes (apps.eventing.services): emit() writes the envelope with the producer's
change, or not at all; an operator replays or discards a dead letter once."""

import pytest
from django.db import DatabaseError, transaction

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict
from apps.core.outbox import emit
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, OutboxEvent
from apps.eventing.services import (
    PayloadNotJson,
    UnknownTopic,
    dead_letter_discard,
    dead_letter_replay,
)
from apps.registry.selectors import resolve_topic
from apps.tenancy.models import AuditEvent
from tests.eventing.factories import make_dead_letter

pytestmark = pytest.mark.django_db


def outbox():
    with system_scope():
        return list(OutboxEvent.objects.order_by("id"))


def test_emit_writes_the_full_envelope_in_the_callers_transaction(tenant_a, topic):
    with tenant_scope(tenant_a):
        envelope = emit(
            topic=topic.name,
            event_type="widget.created",
            aggregate_type="widget",
            aggregate_id="w-1",
            payload={"size": 3},
            tenant=tenant_a,
            causation_id="c-1",
        )
    [row] = outbox()
    assert row.event_id == envelope.event_id
    assert (row.topic, row.event_type, row.schema_version) == (topic.name, "widget.created", 3)
    assert (row.tenant_id, row.aggregate_type, row.aggregate_id) == (tenant_a.pk, "widget", "w-1")
    assert row.payload == {"size": 3}
    assert row.correlation_id == str(envelope.event_id)  # no request: the event starts a chain
    assert row.causation_id == "c-1"


def test_an_emit_rolled_back_with_its_transaction_leaves_nothing(tenant_a, topic):
    with pytest.raises(RuntimeError), tenant_scope(tenant_a):
        emit(
            topic=topic.name,
            event_type="x",
            aggregate_type="w",
            aggregate_id="1",
            payload={},
            tenant=tenant_a,
        )
        raise RuntimeError("the producer's change failed")
    assert outbox() == []


def test_an_unknown_topic_is_refused_and_writes_nothing(tenant_a):
    with tenant_scope(tenant_a), pytest.raises(UnknownTopic) as refused:
        emit(
            topic="no.such",
            event_type="x",
            aggregate_type="w",
            aggregate_id="1",
            payload={},
            tenant=tenant_a,
        )
    assert refused.value.code == "unknown_topic"
    assert outbox() == []


@pytest.mark.parametrize(
    "payload", [{"when": {1, 2}}, {"ratio": float("nan")}, ["not", "an object"]]
)
def test_a_payload_that_is_not_a_json_object_is_refused(tenant_a, topic, payload):
    with tenant_scope(tenant_a), pytest.raises(PayloadNotJson) as refused:
        emit(
            topic=topic.name,
            event_type="x",
            aggregate_type="w",
            aggregate_id="1",
            payload=payload,
            tenant=tenant_a,
        )
    assert refused.value.code == "payload_not_json"
    assert outbox() == []


def test_a_tenant_cannot_emit_another_tenants_event(tenant_a, tenant_b, topic):
    with tenant_scope(tenant_a):
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            emit(
                topic=topic.name,
                event_type="x",
                aggregate_type="w",
                aggregate_id="1",
                payload={},
                tenant=tenant_b,
            )


def test_the_topic_cache_follows_a_new_schema_version(tenant_a, topic):
    assert resolve_topic(topic.name).schema_version == 3
    topic.current_schema_version = 4
    topic.save()
    with tenant_scope(tenant_a):
        emit(
            topic=topic.name,
            event_type="x",
            aggregate_type="w",
            aggregate_id="1",
            payload={},
            tenant=tenant_a,
        )
    assert outbox()[0].schema_version == 4


def test_a_dead_letter_is_resolved_once_and_audited(tenant_a, topic, webhook_subscription):
    replayed = make_dead_letter(tenant_a, topic, webhook_subscription, n=1)
    discarded = make_dead_letter(tenant_a, topic, webhook_subscription, n=2)
    assert dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=replayed).state == "replaying"
    assert dead_letter_discard(actor=SYSTEM_ACTOR, dead_letter=discarded).state == "discarded"
    for dead in (replayed, discarded):
        for again in (dead_letter_replay, dead_letter_discard):
            with pytest.raises(Conflict) as refused:
                again(actor=SYSTEM_ACTOR, dead_letter=dead)
            assert refused.value.code == "dead_letter_resolved"
    with system_scope():
        actions = sorted(
            AuditEvent.objects.filter(tenant=tenant_a).values_list("action", "changes")
        )
        assert DeadLetter.objects.get(pk=replayed.pk).resolved_by == "steward"
    assert actions == [
        ("dead_letter.discard", {"state": ["dead", "discarded"]}),
        ("dead_letter.replay", {"state": ["dead", "replaying"]}),
    ]
