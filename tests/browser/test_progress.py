"""Work a person starts in the console and a worker finishes is followed on the page
that started it: a dead letter's replay, a retention sweep and an asset's delegation (a
first one, and a failed one re-driven) each show their progress while they wait for a
worker, and the page moves on to their result by itself once a real worker has done them
(apps.console.progress, the order page's mechanism; an export is an order, followed on
its page: tests/browser/test_governance.py)."""

import contextlib
import uuid

import pytest
from playwright.sync_api import expect

from apps.assets.models import Asset
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.consumers import webhook_runner
from apps.eventing.models import DeadLetter
from apps.governance.models import RetentionSweep
from tests.browser.conftest import NARROW, WIDE
from tests.browser.test_assets import workflow_service
from tests.eventing.conftest import fast_retries, topic
from tests.eventing.factories import SECRET, emit, pump, webhook
from tests.support import LocalServer

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["fast_retries", "topic", "workflow_service"]  # fixtures used here


@contextlib.contextmanager
def worker():
    """A real Celery worker, started only once the page shows the work waiting for one:
    so the page is seen both waiting and done, whatever the worker's speed. It consumes
    both queues, as Steward's worker does (docker-compose.yml): a sweep asked for runs
    the nightly task, routed to `periodic`."""
    from celery.contrib.testing.worker import start_worker

    from portal.celery import app

    with start_worker(
        app,
        pool="solo",
        perform_ping_check=False,
        queues=["default", "periodic"],
        shutdown_timeout=30,
    ):
        yield


def look_at_it_everywhere(journey, user, path: str, name: str) -> None:
    """The page as it waits, at a phone's width and in the dark theme too (screenshots
    for a person, and axe-core on each)."""
    for viewport, scheme in ((NARROW, "light"), (WIDE, "dark"), (NARROW, "dark")):
        tab = journey(
            f"{name}-{viewport['width']}-{scheme}", viewport=viewport, color_scheme=scheme
        )
        tab.sign_in_as(user)
        page = tab.open(path)
        expect(page.locator("#progress progress")).to_be_visible()
        tab.assert_fits_the_width()
        tab.screenshot("waiting")


def shows_it_waits(journey, tab, user, said: str, name: str):
    """The page `tab` shows says its work waits (`said`), with a progress bar; looked
    at everywhere. Returns the progress part, to see it go once the work is done."""
    progress = tab.page.locator("#progress")
    expect(progress).to_contain_text(said)
    expect(progress.locator("progress")).to_be_visible()
    tab.screenshot("1-waiting")
    look_at_it_everywhere(journey, user, tab.page.url, name)
    return progress


def test_a_replay_shows_its_progress_until_a_worker_has_delivered_it(
    journey, operator, tenant_a, topic, fast_retries, monkeypatch
):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_TEST", SECRET)
    answers = iter([(500, {"error": "down"})] * fast_retries["MAX_ATTEMPTS"])
    with LocalServer(respond=lambda _r: next(answers, (200, {}))) as server:
        subscription = webhook(topic, server.url, "billing")
        [envelope] = emit(tenant_a, topic, 1)
        pump(webhook_runner(subscription))
        with system_scope():
            dead = DeadLetter.objects.get()

        tab = journey()
        tab.sign_in_as(operator)
        page = tab.open(f"/eventing/dead-letters/{dead.pk}/")
        expect(page.locator("#progress")).to_have_count(0)
        page.get_by_role("button", name="Replay to billing").click()

        # given no worker yet: the page says the replay waits, with a progress bar
        progress = page.locator("#progress")
        expect(progress).to_contain_text("Replay queued")
        expect(progress.locator("progress")).to_be_visible()
        expect(page.locator("hgroup p")).to_contain_text("Replay queued")
        tab.screenshot("1-queued")
        look_at_it_everywhere(journey, operator, page.url, "replay")

        # when a worker delivers it: the same page, not reloaded by hand, shows the result
        with worker():
            expect(page.locator("hgroup p")).to_contain_text("Replayed", timeout=30_000)
            expect(page.get_by_role("status")).to_contain_text("Replay done")
            expect(page.locator("#progress")).to_have_count(0)
            tab.screenshot("2-done")

    delivered = server.received[fast_retries["MAX_ATTEMPTS"] :]
    assert [r.headers["webhook-id"] for r in delivered] == [str(envelope.event_id)]


def test_a_sweep_asked_for_shows_its_progress_until_it_has_run(journey, operator):
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/governance/retention/")
    expect(page.get_by_role("cell", name="No sweep has run yet.")).to_be_visible()
    page.get_by_role("button", name="Run tonight's sweep now").click()

    # given no worker yet: the overview says the sweep waits for one
    progress = shows_it_waits(journey, tab, operator, "waiting for a worker", "sweep")
    expect(page.get_by_role("button", name="Run tonight's sweep now")).to_have_count(0)

    # when a worker runs it: the page follows it to the sweep's row in the table
    with worker():
        expect(progress).to_have_count(0, timeout=30_000)
    rows = page.locator("tbody tr").filter(has_text="Succeeded")
    expect(rows).to_have_count(1)
    expect(page.get_by_role("button", name="Run tonight's sweep now")).to_be_visible()
    tab.screenshot("2-done")
    with system_scope():
        assert RetentionSweep.objects.get().status == "succeeded"


def test_a_delegation_shows_its_progress_until_a_worker_has_sent_it(
    journey, admin_a, tenant_a, workflow_service
):
    with tenant_scope(tenant_a):
        asset = Asset.objects.create(tenant=tenant_a, name="churn model")
    tab = journey()
    tab.sign_in_as(admin_a)
    page = tab.open(asset.get_absolute_url())
    page.get_by_role("button", name="Request approval").click()

    # given no worker yet: the asset page says the delegation waits for one
    progress = shows_it_waits(journey, tab, admin_a, "Delegation sent", "delegation")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)

    # when a worker has the Workflow Service's instance: the page shows it by itself
    with worker():
        expect(page.locator("hgroup p")).to_contain_text(
            "waiting on the Workflow Service", timeout=30_000
        )
    expect(progress).to_have_count(0)
    with tenant_scope(tenant_a):
        asset.refresh_from_db()
    expect(page.locator("dd code")).to_have_text(str(asset.workflow_instance_id))
    tab.screenshot("2-delegated")


def test_a_failed_delegation_re_driven_shows_its_progress_until_it_is_sent(
    journey, admin_a, tenant_a, workflow_service
):
    with tenant_scope(tenant_a):
        asset = Asset.objects.create(
            tenant=tenant_a,
            name="churn model",
            status=Asset.Status.REQUESTED,
            approval_request_id=uuid.uuid4(),
            delegation_failure=Asset.DelegationFailure.FAILED,
            status_reason="The Workflow Service did not answer.",
        )
    tab = journey()
    tab.sign_in_as(admin_a)
    page = tab.open(asset.get_absolute_url())
    expect(page.get_by_role("alert")).to_contain_text("Delegation failed")
    page.get_by_role("button", name="Retry the delegation").click()

    progress = page.locator("#progress")
    expect(progress).to_contain_text("Delegation sent")
    expect(page.get_by_role("alert")).to_have_count(0)
    tab.screenshot("1-sent")

    with worker():
        expect(page.locator("hgroup p")).to_contain_text(
            "waiting on the Workflow Service", timeout=30_000
        )
    expect(progress).to_have_count(0)
    assert len(workflow_service.instances) == 1
