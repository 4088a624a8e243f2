"""The progress part of pages whose work a worker finishes (apps.console.progress): asked
for again, it answers the same part while the work is where the page shows it, and a
whole-page reload once it has moved on; only those who may see the work may ask, and a
made-up question gets a page, never an error. (The journeys in a browser, with a real
worker: tests/browser/test_progress.py.)"""

from __future__ import annotations

import uuid
from datetime import timedelta
from urllib.parse import unquote

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.assets.models import Asset
from apps.core.models import ScheduledJob
from apps.core.scope import tenant_scope
from apps.eventing.models import DeadLetter
from apps.governance.retention.selectors import SWEEP_JOB, sweep_run_state
from tests.eventing.conftest import topic, webhook_subscription
from tests.eventing.factories import make_dead_letter
from tests.factories import member

__all__ = ["topic", "webhook_subscription"]  # fixtures used here


@pytest.fixture
def replaying(tenant_a, topic, webhook_subscription):
    dead = make_dead_letter(tenant_a, topic, webhook_subscription)
    with tenant_scope(tenant_a):  # row-level security: the owner's scope writes
        DeadLetter.objects.filter(pk=dead.pk).update(state=DeadLetter.State.REPLAYING)
    return dead


def test_a_queued_replay_is_followed_until_it_has_moved_on(client, operator, tenant_a, replaying):
    client.force_login(operator)
    page = client.get(reverse("eventing:dead-letter-detail", args=[replaying.pk])).content.decode()
    url = reverse("eventing:dead-letter-progress", args=[replaying.pk])
    assert f'hx-get="{url}?state=replaying"' in page and "<progress" in page

    again = client.get(url, {"state": "replaying"})
    assert again.status_code == 200 and 'id="progress"' in again.content.decode()
    assert "HX-Refresh" not in again

    with tenant_scope(tenant_a):
        DeadLetter.objects.filter(pk=replaying.pk).update(state=DeadLetter.State.REPLAYED)
    moved = client.get(url, {"state": "replaying"})
    assert moved.status_code == 204 and moved["HX-Refresh"] == "true"
    page = client.get(reverse("eventing:dead-letter-detail", args=[replaying.pk])).content.decode()
    assert 'id="progress"' not in page and "Replay done" in page


def test_only_operators_follow_a_replay(client, tenant_a, replaying):
    client.force_login(member(tenant_a, role="admin", username="admin-a"))
    url = reverse("eventing:dead-letter-progress", args=[replaying.pk])
    assert client.get(url, {"state": "replaying"}).status_code == 403


def test_a_sweeps_state_is_read_from_its_jobs_record(db):
    asked = timezone.now()
    assert sweep_run_state(asked) == "queued"  # never run
    ScheduledJob.objects.create(name=SWEEP_JOB, last_started_at=asked - timedelta(hours=1))
    assert sweep_run_state(asked) == "queued"  # last run was before the ask
    ScheduledJob.objects.filter(name=SWEEP_JOB).update(
        running_since=asked + timedelta(seconds=1), last_started_at=asked + timedelta(seconds=1)
    )
    assert sweep_run_state(asked) == "running"
    ScheduledJob.objects.filter(name=SWEEP_JOB).update(running_since=None)
    assert sweep_run_state(asked) == "done"


def test_a_sweep_asked_for_is_followed_on_the_overview(client, operator):
    client.force_login(operator)
    answer = client.post(reverse("retention:sweep-now"))
    assert answer.status_code == 302 and "?asked=" in answer["Location"]
    page = client.get(answer["Location"]).content.decode()
    assert (
        "waiting for a worker" in page and 'hx-get="/governance/retention/sweeps/progress/' in page
    )

    asked = answer["Location"].split("asked=")[1]
    progress = reverse("retention:sweep-progress")
    still = client.get(f"{progress}?asked={asked}&state=queued")
    assert still.status_code == 200 and "waiting for a worker" in still.content.decode()
    moved = client.get(f"{progress}?asked={asked}&state=running")
    assert moved.status_code == 204 and moved["HX-Refresh"] == "true"


@pytest.mark.parametrize("asked", ["", "yesterday", "2026-13-40T99:00", "2026-01-01T00:00"])
def test_a_made_up_ask_shows_the_page_without_progress(client, operator, asked):
    client.force_login(operator)
    page = client.get(reverse("retention:overview"), {"asked": asked})
    assert page.status_code == 200 and 'id="progress"' not in page.content.decode()


def test_only_operators_run_a_sweep(client, tenant_a):
    client.force_login(member(tenant_a, role="admin", username="admin-a"))
    assert client.post(reverse("retention:sweep-now")).status_code == 403
    assert client.get(reverse("retention:sweep-progress")).status_code == 403


def test_a_sweep_asked_for_while_one_runs_follows_that_one(client, operator):
    # given a sweep running since a minute ago (a second run would only be skipped)
    started = timezone.now() - timedelta(minutes=1)
    ScheduledJob.objects.create(name=SWEEP_JOB, running_since=started, last_started_at=started)
    client.force_login(operator)
    answer = client.post(reverse("retention:sweep-now"))
    page = client.get(answer["Location"]).content.decode()
    assert "The sweep runs" in page
    # when it ends, the page has followed it to its end
    ScheduledJob.objects.filter(name=SWEEP_JOB).update(running_since=None)
    assert "The sweep runs" not in client.get(answer["Location"]).content.decode()
    asked = answer["Location"].split("asked=")[1]
    assert unquote(asked) == started.isoformat()


def test_a_delegation_sent_is_followed_until_the_worker_has_its_instance(client, tenant_a, admin_a):
    with tenant_scope(tenant_a):
        asset = Asset.objects.create(tenant=tenant_a, name="churn model")
    client.force_login(admin_a)
    answer = client.post(reverse("assets:asset-request", args=[asset.pk]), {"delegate": "on"})
    assert answer.status_code == 302 and answer["Location"].endswith("?delegating=1")
    page = client.get(answer["Location"]).content.decode()
    url = reverse("assets:delegation-progress", args=[asset.pk])
    assert f'hx-get="{url}?delegating=1&amp;state=delegating"' in page
    assert "Delegation sent" in page and ">Approve<" not in page

    still = client.get(url, {"delegating": "1", "state": "delegating"})
    assert still.status_code == 200 and "Delegation sent" in still.content.decode()
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=asset.pk).update(
            workflow_instance_id=uuid.uuid4(), workflow_link_stale=False
        )
    moved = client.get(url, {"delegating": "1", "state": "delegating"})
    assert moved.status_code == 204 and moved["HX-Refresh"] == "true"
    page = client.get(answer["Location"]).content.decode()
    assert 'id="progress"' not in page and "waiting on the Workflow Service" in page


def test_a_request_left_to_a_person_is_not_followed(client, tenant_a, admin_a):
    """Without a delegation nothing waits on a worker: the page offers the decision, and
    a made-up `?delegating=1` shows no progress either."""
    with tenant_scope(tenant_a):
        asset = Asset.objects.create(tenant=tenant_a, name="churn model")
    client.force_login(admin_a)
    answer = client.post(reverse("assets:asset-request", args=[asset.pk]))
    assert answer.status_code == 302 and "delegating" not in answer["Location"]
    for path in (answer["Location"], f"{answer['Location']}?delegating=1"):
        page = client.get(path).content.decode()
        assert 'id="progress"' not in page and ">Approve<" in page


def test_only_the_signed_in_follow_a_delegation(client, tenant_a):
    with tenant_scope(tenant_a):
        asset = Asset.objects.create(tenant=tenant_a, name="churn model")
    url = reverse("assets:delegation-progress", args=[asset.pk])
    assert client.get(url, {"state": "delegating"}).status_code in (302, 403)
