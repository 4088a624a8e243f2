"""A topic's compatibility policy changed after its creation (issue 38, gap 5): by those
who change its level (its producers, operators), audited, announced when lowered, shown
in the console; a version already waiting keeps the verdict it was announced with."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from apps.core.scope import system_scope
from apps.registry.models import SchemaVersion, Topic
from apps.registry.news import LOWERED
from apps.tenancy.models import AuditEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.factories import events, outcome, sync

pytestmark = pytest.mark.django_db

TOPIC = "orders.order"
OPEN = {"type": "object", "properties": {"id": {"type": "string"}}}
# closing an open content model: breaking under STRICT, allowed under LENIENT
CLOSED = {**OPEN, "additionalProperties": False}
# a property added to an open model: breaking under STRICT, allowed under LENIENT
WIDER = {**OPEN, "properties": {**OPEN["properties"], "note": {"type": "string"}}}


def url(name=TOPIC):
    return f"/api/v1/registry/topics/{name}/compatibility-policy/"


def token(name, scopes=("registry:read", "registry:write")):
    return bearer(APIClient(), service_token(scopes=list(scopes), name=name))


def audits(action):
    with system_scope():
        return list(AuditEvent.objects.filter(action=action).values_list("changes", flat=True))


def test_a_producer_lowers_its_topics_policy_audited_and_announced():
    sync("r1", OPEN)
    # when
    answer = token("orders").put(url(), {"compatibility_policy": "LENIENT"}, format="json")
    # then
    assert answer.status_code == 200, answer.content
    assert answer.json()["compatibility_policy"] == "LENIENT"
    assert Topic.objects.get(name=TOPIC).compatibility_policy == "LENIENT"
    assert audits("topic.compatibility_lowered") == [
        {"compatibility_policy": ["STRICT", "LENIENT"]}
    ]
    [lowered] = events(LOWERED)
    assert (lowered["setting"], lowered["from"], lowered["to"]) == ("policy", "STRICT", "LENIENT")
    assert lowered["consumers"] == ["billing", "ledger"]
    # and the next version is judged under it: published at once, no one asked
    published = outcome(sync("r2", CLOSED))
    assert (published["outcome"], published["verdict"]["policy"]) == ("published", "LENIENT")


def test_raising_the_policy_is_audited_not_announced_and_the_same_policy_changes_nothing():
    sync("r1", OPEN)
    Topic.objects.filter(name=TOPIC).update(compatibility_policy="LENIENT")
    producer = token("orders")
    assert producer.put(url(), {"compatibility_policy": "STRICT"}, format="json").status_code == 200
    assert producer.put(url(), {"compatibility_policy": "STRICT"}, format="json").status_code == 200
    assert audits("topic.compatibility_policy") == [{"compatibility_policy": ["LENIENT", "STRICT"]}]
    assert events(LOWERED) == []
    # STRICT again: closing the open model waits for the consumers
    assert outcome(sync("r2", CLOSED))["outcome"] == "awaiting_acknowledgement"


def test_only_its_producers_and_operators_change_it(client, operator):
    sync("r1", OPEN)
    body = {"compatibility_policy": "LENIENT"}
    # a consumer's token, and a registry:admin grant (the Schema Registry API's tooling,
    # which has no policy to set) of a service that does not produce the topic
    for caller in (token("billing"), token("tooling", ["registry:write", "registry:admin"])):
        refused = caller.put(url(), body, format="json")
        assert refused.status_code == 403, refused.content
        assert refused.json()["code"] == "permission_denied"
    assert Topic.objects.get(name=TOPIC).compatibility_policy == "STRICT"
    # a policy that does not exist, and a topic that does not
    producer = token("orders")
    wrong = producer.put(url(), {"compatibility_policy": "SLOPPY"}, format="json")
    assert (wrong.status_code, wrong.json()["code"]) == (400, "invalid")
    assert producer.put(url("nope"), body, format="json").status_code == 404
    assert audits("topic.compatibility_lowered") == []
    # an operator may
    api = APIClient()
    api.force_login(operator)
    assert api.put(url(), body, format="json").status_code == 200
    # and the console's topic list shows it
    client.force_login(operator)
    page = client.get(reverse("registry:topic-list")).content.decode()
    assert "Policy" in page and "LENIENT" in page


def test_a_waiting_version_keeps_its_verdict_and_nothing_lowered_passes_it(client, operator):
    sync("r1", OPEN)
    assert outcome(sync("r2", CLOSED))["outcome"] == "awaiting_acknowledgement"
    # when
    token("orders").put(url(), {"compatibility_policy": "LENIENT"}, format="json")
    # then: v2 still waits, judged as it was announced
    waiting = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    assert (waiting.version, waiting.verdict["policy"]) == (2, "STRICT")
    assert waiting.awaiting_consumers == ["billing", "ledger"]
    # a newer version that only the lowered policy passes does not push it aside
    refused = outcome(sync("r3", WIDER))
    assert refused["outcome"] == "refused"
    assert "STRICT" in refused["reason"] and "LENIENT" in refused["reason"]
    assert SchemaVersion.objects.get(state="awaiting_acknowledgement").version == 2
    # and the version's console page says why its verdict is not the policy in force
    client.force_login(operator)
    page = client.get(waiting.get_absolute_url()).content.decode()
    assert 'id="policy-changed"' in page and "The topic's policy is now LENIENT" in page
