"""The attention queue: each thing that stalls is seen there with what would unblock
it, announced once as it enters, resolved through its action (audited; a refusal has a
stable code and changes nothing), and counted at /metrics."""

import os
import shutil
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from apps.attention import services
from apps.attention.models import AttentionEntry
from apps.core.attention import kinds
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, OutboxEvent
from apps.governance.models import GovernanceTask
from apps.governance.orders.services import flag_overdue_owner_tasks
from apps.registry.models import Subscription
from apps.stores.models import StoreBinding
from apps.tenancy.models import AuditEvent
from tests.attention.conftest import fresh
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.factories import V1, V2_BREAKING, sync
from tests.support import problem

pytestmark = pytest.mark.django_db
QUEUE = "/api/v1/attention/"
ROOT = Path(__file__).resolve().parents[2]


def act(client, kind, key, action, **body):
    return client.post(f"{QUEUE}{kind}/{key}/{action}/", body, format="json")


def queued(client, kind=None):
    answer = client.get(QUEUE, {"kind": kind} if kind else {})
    assert answer.status_code == 200, answer.content
    return answer.json()


def announced(event_type):
    with system_scope():
        return list(
            OutboxEvent.objects.filter(topic="steward.attention", event_type=event_type)
            .order_by("id")
            .values_list("aggregate_id", flat=True)
        )


def test_every_stall_is_listed_with_what_would_unblock_it_and_its_actions(stalled, api, operator):
    api.force_login(operator)
    body = queued(api)
    by_kind = {item["kind"]: item for item in body["results"]}
    for kind, thing in stalled.items():
        assert by_kind[kind]["key"] == str(thing.pk), kind
        assert by_kind[kind]["waiting_for"], kind
        assert by_kind[kind]["actions"], kind
    assert "westeurope" in by_kind["flagged-binding"]["waiting_for"]
    assert by_kind["stalled-order"]["waiting_for"] == "Failed: index offline"
    assert {a["name"] for a in by_kind["overdue-task"]["actions"]} == {
        "remind",
        "reassign",
        "escalate",
    }
    assert body["counts"]["dead-letter"] == 1 and body["count"] >= len(stalled)
    only = queued(api, "dead-letter")
    assert [i["kind"] for i in only["results"]] == ["dead-letter"]


def test_an_item_is_announced_once_as_it_enters_and_again_as_it_leaves(stalled, op):
    assert services.scan()["raised"] == len(stalled)
    assert services.scan() == {"raised": 0, "cleared": 0}  # a second scan: nothing new
    raised = announced("AttentionItemRaised")
    assert f"dead-letter:{stalled['dead-letter'].pk}" in raised and len(raised) == len(stalled)
    services.item_act(
        actor=op, kind="dead-letter", key=str(stalled["dead-letter"].pk), action="discard", data={}
    )
    assert announced("AttentionItemCleared") == [f"dead-letter:{stalled['dead-letter'].pk}"]
    with system_scope():
        entry = AttentionEntry.objects.get(kind="dead-letter")
    assert entry.left_at is not None


def test_each_action_resolves_its_item_and_is_audited(stalled, api, operator, tenant_a):
    api.force_login(operator)
    steps = [
        (
            "flagged-binding",
            "grant-exception",
            {
                "reason": "DPA signed",
                "expires_at": (timezone.now() + timedelta(days=9)).isoformat(),
            },
        ),
        ("stalled-binding", "retry", {}),
        ("overdue-task", "escalate", {"reason": "owner unreachable for a week"}),
        ("stalled-order", "retry", {}),
        ("dead-letter", "replay", {}),
        ("failed-delegation", "decide", {"decision": "rejected", "reason": "no definition"}),
        ("overdue-decision", "retire", {"reason": "no longer needed"}),
        ("unknown-callback", "dismiss", {"reason": "a test instance of the service"}),
        ("uncertain-effect", "settle-not-done", {"reason": "the other side has no record"}),
    ]
    for kind, action, body in steps:
        answer = act(api, kind, str(stalled[kind].pk), action, **body)
        assert answer.status_code == 200, (kind, answer.content)
        assert answer.json()["result"]
    assert queued(api)["count"] == 0
    assert fresh(stalled["flagged-binding"]).exception_in_force()
    assert fresh(stalled["stalled-binding"]).status == StoreBinding.Status.PROVISIONED
    assert fresh(stalled["overdue-task"]).escalated_at is not None
    assert fresh(stalled["stalled-order"]).status == GovernanceTask.Status.ISSUED
    assert fresh(stalled["dead-letter"]).state == DeadLetter.State.REPLAYING
    assert fresh(stalled["failed-delegation"]).status == "rejected"
    assert fresh(stalled["overdue-decision"]).status == "retired"
    assert fresh(stalled["unknown-callback"]).resolution == "dismissed"
    assert fresh(stalled["uncertain-effect"]).state == "failed"
    with system_scope():
        actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {
        "store_binding.grant_exception",
        "store_binding.retry",
        "governance.task.escalate",
        "governance.task.retry",
        "dead_letter.replay",
    } <= actions
    with system_scope():
        [escalated] = OutboxEvent.objects.filter(event_type="GovernanceTaskEscalated")
    assert escalated.payload["reason"] == "owner unreachable for a week"


def test_an_overdue_task_is_reminded_or_reassigned_and_refusals_change_nothing(
    stalled, api, operator
):
    api.force_login(operator)
    task = stalled["overdue-task"]
    refused = act(api, "overdue-task", str(task.pk), "reassign", owner="nobody", reason="r")
    assert problem(refused, 400, "unknown_owner")
    refused = act(api, "overdue-task", str(task.pk), "reassign", owner="knowledge", reason="r")
    assert problem(refused, 409, "same_owner")
    refused = act(api, "overdue-task", str(task.pk), "escalate")
    assert problem(refused, 400, "reason_required")
    assert fresh(task).owner == "knowledge" and fresh(task).escalated_at is None
    answer = act(api, "overdue-task", str(task.pk), "reassign", owner="search", reason="moved")
    assert answer.status_code == 200, answer.content
    task = fresh(task)
    assert (task.owner, task.overdue_at, task.status) == ("search", None, "issued")
    assert task.due_at > timezone.now()
    with system_scope():
        told = set(
            OutboxEvent.objects.filter(aggregate_id=str(task.pk)).values_list("topic", "event_type")
        )
    assert ("governance.tasks.knowledge", "GovernanceTaskReassigned") in told
    assert ("governance.tasks.search", "GovernanceTaskIssued") in told
    # reassigned, it no longer waits; once late again, a reminder makes it due afresh
    assert not any(i["kind"] == "overdue-task" for i in queued(api)["results"])
    with tenant_scope(task.tenant_id):
        GovernanceTask.objects.filter(pk=task.pk).update(due_at=timezone.now() - timedelta(hours=1))
    assert flag_overdue_owner_tasks() == 1
    assert act(api, "overdue-task", str(task.pk), "remind").status_code == 200
    assert fresh(task).reminded_at is not None and fresh(task).overdue_at is None
    with system_scope():
        assert OutboxEvent.objects.filter(
            event_type="GovernanceTaskReminder", aggregate_id=str(task.pk)
        ).exists()


def test_the_queue_refuses_what_it_cannot_do_with_stable_codes(stalled, api, operator, admin_a):
    api.force_login(operator)
    dead = str(stalled["dead-letter"].pk)
    assert problem(act(api, "no-such-kind", dead, "replay"), 404, "not_found")
    assert problem(act(api, "dead-letter", dead, "shred"), 400, "unknown_action")
    assert problem(act(api, "dead-letter", "not-a-uuid", "replay"), 404, "not_in_queue")
    assert problem(api.get(QUEUE, {"kind": "nope"}), 400, "invalid")
    assert problem(
        act(api, "flagged-binding", str(stalled["flagged-binding"].pk), "retire"),
        400,
        "reason_required",
    )
    assert fresh(stalled["flagged-binding"]).status == "active"
    receipt = str(stalled["unknown-callback"].pk)
    refused = act(api, "unknown-callback", receipt, "link", asset=str(uuid.uuid4()))
    assert problem(refused, 400, "unknown_asset")
    effect = str(stalled["uncertain-effect"].pk)
    refused = act(api, "uncertain-effect", effect, "settle-done", reason="it went through")
    assert problem(refused, 400, "reference_required")
    assert fresh(stalled["uncertain-effect"]).state == "uncertain"
    refused = act(
        api,
        "failed-delegation",
        str(stalled["failed-delegation"].pk),
        "decide",
        decision="maybe",
        reason="r",
    )
    assert problem(refused, 400, "invalid")
    assert act(api, "dead-letter", dead, "discard").status_code == 200
    # the same again: no longer waiting
    assert problem(act(api, "dead-letter", dead, "discard"), 404, "not_in_queue")
    # a tenant's admin neither sees the queue nor acts on it
    api.force_login(admin_a)
    assert api.get(QUEUE).status_code == 403
    assert act(api, "dead-letter", dead, "replay").status_code == 403


def test_a_platform_service_reads_the_queue_but_cannot_act(stalled, api):
    pager = bearer(api, service_token(name="pager", scopes=["attention:read", "attention:write"]))
    assert queued(pager)["counts"]["dead-letter"] == 1
    dead = stalled["dead-letter"]
    assert act(pager, "dead-letter", str(dead.pk), "discard").status_code == 403
    assert fresh(dead).state == DeadLetter.State.DEAD


def test_each_kind_is_a_gauge_at_metrics(stalled, client, settings):
    services.scan()
    body = client.get("/metrics").content.decode()
    for kind in kinds():
        assert f'steward_attention_items{{kind="{kind}"}}' in body
    assert 'steward_attention_items{kind="dead-letter"} 1.0' in body
    assert 'steward_attention_oldest_seconds{kind="dead-letter"}' in body


def test_the_alert_rules_cover_every_kind():
    rules = yaml.safe_load((ROOT / "docs" / "attention-alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert all({"alert", "expr", "labels", "annotations"} <= set(rule) for rule in alerts)
    exprs = " ".join(rule["expr"] for rule in alerts)
    for kind in kinds():
        assert f'kind="{kind}"' in exprs, kind


def test_promtool_accepts_the_alert_rules():
    promtool = os.environ.get("STEWARD_PROMTOOL") or shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool is needed: run the tests through `make test`", pytrace=False)
    checked = subprocess.run(  # noqa: S603
        [promtool, "check", "rules", str(ROOT / "docs" / "attention-alerts.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_a_consumer_news_cannot_reach_is_subscribed_from_the_queue(api, operator, monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_BILLING", "whsec-billing")
    sync("r1", V1, consumers=("billing",))
    sync("r2", V2_BREAKING, consumers=("billing",))  # awaits billing's acknowledgement
    api.force_login(operator)
    [item] = queued(api, "unreachable-consumer")["results"]
    assert item["title"].startswith("billing on orders.order (v2, awaiting")
    assert item["since"]  # dated from its entry into the queue
    refused = act(api, "unreachable-consumer", item["key"], "subscribe", transport="pigeon")
    assert problem(refused, 400, "invalid")
    answer = act(
        api,
        "unreachable-consumer",
        item["key"],
        "subscribe",
        transport="webhook",
        endpoint="https://billing.example/hooks",
        secret_ref="env:STEWARD_WEBHOOK_SECRET_BILLING",
    )
    assert answer.status_code == 200, answer.content
    assert "news sent again" in answer.json()["result"]
    assert queued(api, "unreachable-consumer")["results"] == []
    with system_scope():
        assert Subscription.objects.filter(
            consumer__name="billing", topic__name="orders.order", transport="webhook"
        ).exists()
        reminded = OutboxEvent.objects.filter(
            event_type="SchemaVersionAwaitingAcknowledgement", payload__reminder=True
        )
        assert reminded.exists()


def test_the_page_acts_only_on_a_confirmed_destructive_action(stalled, client, operator):
    client.force_login(operator)
    dead = stalled["dead-letter"]
    url = f"/attention/dead-letter/{dead.pk}/discard/"
    client.post(url)  # the disclosure's button was never pressed
    assert fresh(dead).state == DeadLetter.State.DEAD
    client.post(url, {"confirm": "yes"})
    assert fresh(dead).state == DeadLetter.State.DISCARDED
    page = client.get("/attention/?kind=flagged-binding").content.decode()
    assert "This revokes the binding" in page and "Confirm: retire the binding" in page
