"""A tenant admin creates an asset and delegates its approval; the Workflow Service (a
real local HTTP server) starts an instance, later calls back, and a real worker applies
the decision while the admin watches the asset page."""

import json
import time
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from apps.assets.models import Asset
from apps.core.scope import tenant_scope
from apps.eventing.transports import webhook_signature
from tests.assets.fakes import FakeWorkflowService
from tests.support import LocalServer

SECRET = "journey-callback-secret"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def workflow_service(settings):
    service = FakeWorkflowService()
    with LocalServer(respond=service) as server:
        settings.STEWARD_WORKFLOW_SERVICE_URL = server.url
        settings.STEWARD_WORKFLOW_CALLBACK_SECRET = SECRET
        yield service


def call_back(base_url: str, instance: str, decision: str) -> httpx.Response:
    """The Workflow Service's signed callback, over HTTP to the live server."""
    body = json.dumps(
        {"workflow_instance_id": instance, "decision": decision, "reason": "four eyes"}
    ).encode()
    callback_id, stamp = f"cb-{uuid.uuid4().hex[:8]}", int(time.time())
    return httpx.post(
        f"{base_url}/api/v1/assets/workflow-callbacks/",
        content=body,
        headers={
            "content-type": "application/json",
            "webhook-id": callback_id,
            "webhook-timestamp": str(stamp),
            "webhook-signature": webhook_signature(SECRET.encode(), callback_id, stamp, body),
        },
    )


def test_an_asset_approval_is_delegated_and_decided_by_a_callback(
    journey, live_server, tenant_a, admin_a, workflow_service, celery_worker
):
    tab = journey()
    tab.sign_in_as(admin_a)
    page = tab.open("/assets/")
    page.get_by_role("button", name="New asset").click()
    page.locator("main").get_by_label("Name").fill("churn model")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="churn model")).to_be_visible()
    expect(page.get_by_text("alpha · Draft")).to_be_visible()

    # Request approval, leaving the decision to the Workflow Service (the default).
    expect(page.get_by_label("Let the Workflow Service decide")).to_be_checked()
    page.get_by_role("button", name="Request approval").click()
    # The worker asks the Workflow Service to start an instance and keeps its id.
    waiting = page.get_by_text("Requested · waiting on the Workflow Service")
    tab.reload_until(waiting)
    with tenant_scope(tenant_a):
        asset = Asset.objects.get(name="churn model")
    instance = str(asset.workflow_instance_id)
    assert list(workflow_service.instances.values()) == [instance]
    expect(page.locator("dd code")).to_have_text(instance)
    tab.screenshot("1-waiting")

    # The Workflow Service decides; its callback (and a duplicate) are answered 202.
    assert call_back(live_server.url, instance, "approve").status_code == 202
    assert call_back(live_server.url, instance, "approve").status_code == 202
    tab.reload_until(page.get_by_text("alpha · Approved"))
    callbacks = page.locator("table").first
    expect(callbacks.locator("tbody tr")).to_have_count(2)
    expect(callbacks.get_by_role("cell", name="Applied", exact=True)).to_have_count(1)
    expect(
        callbacks.get_by_role("cell", name="Ignored (already decided)", exact=True)
    ).to_have_count(1)
    # The reference stays, as the link back to the workflow instance.
    expect(page.locator("dd code")).to_have_text(instance)
    expect(page.get_by_role("cell", name="asset.approved")).to_be_visible()
    tab.screenshot("2-approved")
