"""An operator opens the attention queue, sees one stalled thing of each kind with what
would unblock it, and clears every one from the page: a real worker carries out what the
actions start (the dead letter's replay, the binding's revocation)."""

import pytest
from playwright.sync_api import expect

from apps.assets.models import Asset
from apps.core.attention import kinds
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter
from apps.stores.models import StoreBinding
from portal.celery import app
from tests.attention.conftest import (
    local_broker,
    op,
    other_side,
    regions,
    stalled,
    subscriber,
    workflow_service,
)
from tests.registry.factories import V1, V2_BREAKING, sync
from tests.support import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
# fixtures used here
__all__ = [
    "local_broker",
    "op",
    "other_side",
    "regions",
    "stalled",
    "subscriber",
    "workflow_service",
]


def section(page, kind):
    return page.locator(f"section[data-kind='{kind}']")


def press(page, kind, label, **fields):
    """Press an item's action on the queue; fill its inputs first when it has some."""
    row = section(page, kind).locator("tbody tr").first
    if fields:
        row.locator("summary", has_text=label).click()
        form = row.locator("details[open] form")
        for name, value in fields.items():
            field = form.locator(f"[name='{name}']")
            if field.evaluate("e => e.tagName") == "SELECT":
                field.select_option(value)
            else:
                field.fill(value)
        form.locator("button[type=submit]").click()
    else:
        row.get_by_role("button", name=label).click()


@pytest.fixture
def messages_lost(stalled):
    """The broker lost the queued work (Redis restarted empty): the stalled binding's
    provisioning never reaches a worker, as in production it would not."""
    app.control.purge()


def test_an_operator_clears_one_item_of_each_kind_from_the_attention_page(
    journey,
    operator,
    stalled,
    subscriber,
    workflow_service,
    messages_lost,
    celery_worker,
    monkeypatch,
):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_BILLING", "whsec-billing")
    sync("r1", V1, consumers=("billing",))
    sync("r2", V2_BREAKING, consumers=("billing",))
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/")
    expect(page.get_by_text("Waiting on a person")).to_be_visible()
    page.get_by_role("link", name="Attention").first.click()
    for kind in kinds():
        expect(section(page, kind).locator("tbody tr")).to_have_count(1)
    expect(section(page, "flagged-binding")).to_contain_text("westeurope")
    expect(section(page, "stalled-order")).to_contain_text("index offline")
    expect(section(page, "failed-delegation")).to_contain_text("no definition")
    tab.screenshot("1-queue")
    workflow_service.refusing = False  # the Workflow Service is mended

    steps = [
        ("flagged-binding", "Retire the binding", {"reason": "The rules moved to Israel"}),
        ("stalled-binding", "Send its work again now", {}),
        ("overdue-task", "Escalate", {"reason": "No answer from knowledge for a day"}),
        ("stalled-order", "Issue the task again", {}),
        ("dead-letter", "Replay", {}),
        ("failed-delegation", "Delegate again", {}),
        ("overdue-decision", "Retire", {"reason": "The request is no longer needed"}),
        ("unknown-callback", "Dismiss", {"reason": "A test instance of the Workflow Service"}),
        ("uncertain-effect", "Settle as not done", {"reason": "The other side has no record"}),
        (
            "unreachable-consumer",
            "Subscribe it",
            {
                "transport": "webhook",
                "endpoint": "https://billing.example/hooks",
                "secret_ref": "env:STEWARD_WEBHOOK_SECRET_BILLING",
            },
        ),
    ]
    assert {kind for kind, *_ in steps} == set(kinds()), "a kind the journey does not clear"
    for kind, label, fields in steps:
        press(page, kind, label, **fields)
        expect(page.locator("article.message.success")).to_be_visible()
        expect(section(page, kind)).to_contain_text("Nothing waits here.")
    tab.screenshot("2-cleared")

    # What the actions started, a real worker finishes.
    binding = stalled["flagged-binding"]

    def retired():
        with system_scope():
            return StoreBinding.objects.get(pk=binding.pk).status == "retired"

    wait_for(retired, timeout=30)

    def replayed():
        with system_scope():
            dead = DeadLetter.objects.get(pk=stalled["dead-letter"].pk)
        return dead.state == DeadLetter.State.REPLAYED

    wait_for(replayed, timeout=30)
    assert [r.headers["webhook-id"] for r in subscriber.received] == [
        str(stalled["dead-letter"].event_id)
    ]
    asset = stalled["failed-delegation"]

    def delegated():
        with tenant_scope(asset.tenant_id):
            return Asset.objects.get(pk=asset.pk).workflow_instance_id is not None

    wait_for(delegated, timeout=30)
    assert len(workflow_service.instances) == 1
    page.goto("/attention/")
    expect(page.get_by_text("0 items now")).to_be_visible()
