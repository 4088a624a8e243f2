"""The chaos drill: its checks fail on a hand-made loss or double, and a short drill
against a real stack (its own PostgreSQL and Redis, gunicorn, two workers, beat and the
consumers) loses nothing and applies nothing twice."""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.utils import timezone

from apps.assets import services as assets
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import tenant_scope
from apps.eventing.models import InboxEntry, OutboxEvent
from apps.eventing.services import sync_consumer_subscriptions
from bench.chaos import SETTLE_BOUND_SECONDS, redrives, settle_verdict
from bench.chaos_verify import Expected, install_emitted_log, verify

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def logged(db):
    install_emitted_log()
    sync_consumer_subscriptions()


def approved(tenant, *, announcements=1) -> str:
    """An asset decided by the Workflow Service, its decision announced this often,
    every event handled by Steward's consumer and dispatched."""
    asset = assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant, name="weights")
    with tenant_scope(tenant):
        Asset.objects.filter(pk=asset.pk).update(status="approved", decided_at=timezone.now())
        emit_many(
            [
                NewEvent("assets.asset", "AssetApproved", "assets.asset", str(asset.pk), {}, tenant)
                for _ in range(announcements)
            ]
        )
    handle_and_dispatch(tenant)
    return str(asset.pk)


def handle_and_dispatch(tenant, *, skip=()) -> None:
    with tenant_scope(tenant):
        for event_id in OutboxEvent.objects.values_list("event_id", flat=True):
            if event_id not in skip:
                InboxEntry.objects.create(
                    consumer="steward.recent-events", event_id=event_id, tenant=tenant
                )
        OutboxEvent.objects.all().delete()


def test_a_state_with_nothing_lost_or_doubled_passes(logged, tenant_a):
    asset = approved(tenant_a)
    summary = verify(Expected(assets={asset: "approve"}))
    assert summary["ok"], summary
    assert (summary["lost"], summary["doubled"]) == (0, 0)
    assert summary["checks"]["consumers"]["handled"] == summary["emitted"] > 0


def test_an_event_no_consumer_handled_is_lost(logged, tenant_a):
    with tenant_scope(tenant_a):
        kept, forgotten = emit_many(
            [NewEvent("assets.asset", "AssetCreated", "assets.asset", "a", {}, tenant_a)] * 2
        )
    handle_and_dispatch(tenant_a, skip={forgotten.event_id})
    summary = verify(Expected())
    assert not summary["ok"]
    assert summary["checks"]["consumers"]["lost"] == summary["lost"] == 1
    assert summary["checks"]["consumers"]["lost_examples"][0][1] == str(forgotten.event_id)
    assert summary["checks"]["consumers"]["handled"] == 1


def test_a_decision_announced_twice_is_doubled(logged, tenant_a):
    asset = approved(tenant_a, announcements=2)
    summary = verify(Expected(assets={asset: "approve"}))
    assert not summary["ok"]
    assert summary["checks"]["assets"]["doubled"] == summary["doubled"] == 1
    assert summary["checks"]["assets"]["doubled_examples"] == [asset]


def test_an_undecided_asset_and_an_unfinished_batch_are_lost(logged, tenant_a):
    waiting = assets.asset_request_approval(
        actor=SYSTEM_ACTOR,
        asset=assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="pending"),
        delegate=True,
    )
    handle_and_dispatch(tenant_a)
    summary = verify(Expected(assets={str(waiting.pk): "approve"}, batches={str(uuid.uuid4())}))
    assert not summary["ok"]
    assert summary["checks"]["assets"]["lost"] == 1
    assert summary["checks"]["compute"]["lost"] == 1
    assert summary["lost"] == 2


def test_a_state_consistent_only_after_the_bound_is_not_settled():
    assert settle_verdict(True, SETTLE_BOUND_SECONDS - 1)["within_bound"]
    late = settle_verdict(True, SETTLE_BOUND_SECONDS + 1)
    assert not late["within_bound"]
    assert late["after_last_fault_seconds"] == SETTLE_BOUND_SECONDS + 1
    assert not settle_verdict(False, 1.0)["within_bound"]


def test_the_redrives_logged_by_the_processes_are_counted(tmp_path):
    (tmp_path / "worker-1.log").write_text(
        "x WARNING apps.eventing.redrive [-] Redis had lost entries of lanes [1, 7]:"
        " 34 envelopes of the last 3 days, 0:00:00 re-driven\nother line\n"
    )
    (tmp_path / "beat.log").write_text(
        "Redis had lost entries of lanes [2]: 3 envelopes of the last 3 days re-driven\n"
    )
    assert redrives(tmp_path) == {"runs": 2, "envelopes": 37}


def test_the_quick_drill_loses_nothing_and_applies_nothing_twice():
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "bench", "chaos", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    summary = json.loads(lines[-1])
    assert done.returncode == 0 and summary["ok"], json.dumps(summary, indent=1)[:6000]
    assert (summary["lost"], summary["doubled"]) == (0, 0)
    assert [f["fault"] for f in summary["faults"]] == [
        "SIGKILL worker-1",
        "crash PostgreSQL",
        "SIGKILL Redis",
        "pause Redis 8 s",
        "SIGKILL web",
        "SIGKILL beat",
        "SIGKILL consumers",
        "SIGKILL worker-2",
        "lose Redis data",
    ]
    assert summary["settle"]["within_bound"], summary["settle"]
    # Redis came back empty mid-traffic: Steward noticed and published its log again.
    assert summary["redrive"]["runs"] >= 1 and summary["redrive"]["envelopes"] > 0
    traffic = summary["traffic"]
    assert min(traffic[k] for k in ("assets", "batches", "bindings", "orders")) > 0
    assert traffic["schema_versions"] > 1
    checks = summary["checks"]
    assert checks["assets"]["decided"] == traffic["assets"]
    assert checks["consumers"]["handled"] >= summary["emitted"] > 0
    assert checks["webhook"]["received"] == checks["webhook"]["events"] > 0
