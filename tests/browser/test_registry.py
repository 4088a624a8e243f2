"""A producer's release brings a breaking schema version: the operator sees it held, its
consumers acknowledge (one through the API, one through the console), and it is
published."""

import httpx
import pytest
from playwright.sync_api import expect

from apps.registry.models import SchemaVersion
from tests.factories import service_token
from tests.registry.factories import V1, V2_BREAKING

pytestmark = pytest.mark.django_db(transaction=True)


def as_service(base_url: str, name: str) -> httpx.Client:
    issued = service_token(scopes=["registry:write"], name=name)
    # No keep-alive: an idle connection would hold one of the live server's threads, and
    # its database connection, past the end of the run.
    return httpx.Client(
        base_url=base_url,
        headers={"authorization": f"Bearer {issued.secret}", "connection": "close"},
    )


def release(producer: httpx.Client, name: str, schema: dict) -> dict:
    body = {
        "release": name,
        "topics": [{"name": "orders.order", "consumers": ["billing", "ledger"], "schema": schema}],
    }
    answer = producer.post("/api/v1/registry/model-sync/", json=body)
    assert answer.status_code == 200, answer.text
    [topic] = [t for t in answer.json()["topics"] if t["topic"] == "orders.order"]
    return topic


def test_a_breaking_schema_is_held_until_every_consumer_acknowledges(
    journey, live_server, operator
):
    producer = as_service(live_server.url, "orders")
    assert release(producer, "r1", V1)["outcome"] == "published"
    held = release(producer, "r2", V2_BREAKING)
    assert held["outcome"] == "awaiting_acknowledgement"
    assert sorted(held["awaiting"]) == ["billing", "ledger"]

    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/registry/approvals/")
    page.get_by_role("link", name="orders.order v2").click()
    state = page.locator("hgroup p")
    acknowledgements = page.locator("#acknowledgements")
    expect(state).to_contain_text("Awaiting acknowledgement")
    expect(page.get_by_role("heading", name="breaking")).to_be_visible()
    expect(page.get_by_text("Waiting on: billing, ledger")).to_be_visible()
    tab.screenshot("1-held")

    # billing's service acknowledges for itself, through the API.
    version = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    billing = as_service(live_server.url, "billing")
    answer = billing.post(
        f"/api/v1/registry/schema-versions/{version.pk}/acknowledge/", json={"consumer": "billing"}
    )
    assert answer.status_code == 200 and answer.json()["state"] == "awaiting_acknowledgement"
    page.reload()
    expect(page.get_by_text("Waiting on: ledger")).to_be_visible()
    expect(acknowledgements.get_by_role("cell", name="billing", exact=True)).to_be_visible()

    # ledger's team confirmed elsewhere; the operator records it for them.
    page.get_by_role("button", name="Acknowledge for ledger").click()
    expect(state).to_contain_text("Published")
    expect(page.get_by_role("button", name="Acknowledge for")).to_have_count(0)
    expect(acknowledgements.get_by_role("cell", name="ledger", exact=True)).to_be_visible()
    tab.screenshot("2-published")
    version.refresh_from_db()
    assert version.state == "published"
