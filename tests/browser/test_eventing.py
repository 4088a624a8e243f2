"""A consumer's webhook keeps failing and an event ends in dead letters; once the
receiver is mended, the operator finds the dead letter and replays it, and a real
worker delivers it, under its original event id."""

import pytest
from playwright.sync_api import expect

from apps.core.scope import system_scope
from apps.eventing.consumers import webhook_runner
from apps.eventing.models import DeadLetter
from tests.eventing.conftest import fast_retries, topic
from tests.eventing.factories import SECRET, emit, pump, webhook
from tests.support import LocalServer

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["fast_retries", "topic"]  # fixtures used here


class Receiver:
    """A consumer's webhook endpoint: broken until mended."""

    def __init__(self):
        self.mended = False

    def __call__(self, received):
        return (200, {}) if self.mended else (500, {"error": "schema mismatch"})


def test_a_dead_letter_is_replayed_once_the_receiver_is_mended(
    journey, operator, tenant_a, topic, fast_retries, monkeypatch, celery_worker
):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_TEST", SECRET)
    receiver = Receiver()
    with LocalServer(respond=receiver) as server:
        subscription = webhook(topic, server.url, "billing")
        [envelope] = emit(tenant_a, topic, 1)
        pump(webhook_runner(subscription))  # as the consumers process does
        assert len(server.received) == fast_retries["MAX_ATTEMPTS"]

        tab = journey()
        tab.sign_in_as(operator)
        page = tab.open("/eventing/dead-letters/?state=dead")
        row = page.get_by_role("row").filter(has_text=topic.name)
        expect(row).to_have_count(1)
        expect(row).to_contain_text("billing")
        row.get_by_role("link").first.click()
        expect(page.locator("hgroup p")).to_contain_text("Dead")
        expect(page.locator("pre").first).to_contain_text("answered with an error")
        expect(page.get_by_text(str(envelope.event_id)).first).to_be_visible()
        tab.screenshot("1-dead")

        receiver.mended = True
        page.get_by_role("button", name="Replay to billing").click()
        tab.reload_until(page.locator("hgroup p", has_text="Replayed"))
        expect(page.get_by_role("button", name="Replay to billing")).to_have_count(0)
        tab.screenshot("2-replayed")

    delivered = server.received[fast_retries["MAX_ATTEMPTS"] :]
    assert [r.headers["webhook-id"] for r in delivered] == [str(envelope.event_id)]
    with system_scope():
        assert DeadLetter.objects.get().state == "replayed"
