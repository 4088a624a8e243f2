"""Provisioning asks for a store binding in a region residency does not allow: the
operator sees the refusal and why, checks a what-if, grants the tenant an exception in
the rule editor, and the binding asked for again is provisioned and made active."""

import httpx
import pytest
from playwright.sync_api import expect

from apps.core.context import SYSTEM_ACTOR
from apps.stores import services
from tests.factories import service_token
from tests.stores.conftest import local_broker, regions
from tests.stores.factories import rule

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["local_broker", "regions"]  # fixtures used here


@pytest.fixture
def provisioning(transactional_db):
    """The provisioning service's credentials, as it sends them."""
    issued = service_token(scopes=["stores:write"], name="provisioning")
    return {"authorization": f"Bearer {issued.secret}"}


def ask_for_binding(base_url: str, headers: dict, body: dict) -> dict:
    answer = httpx.post(f"{base_url}/api/v1/stores/bindings/", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_a_binding_refused_by_residency_is_allowed_by_an_exception(
    journey, live_server, operator, tenant_a, store, profile, regions, provisioning, celery_worker
):
    rule("allow", geographies=["IL"])
    body = {"store": store.slug, "tenant": tenant_a.slug, "profile": profile.slug}
    refused = ask_for_binding(live_server.url, provisioning, {**body, "region": "eastus"})
    assert refused["status"] == "refused"

    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/stores/?status=refused")
    page.get_by_role("link", name=store.slug).click()
    expect(page.locator("hgroup mark")).to_have_text("Refused")
    expect(page.get_by_text("refused: ")).to_contain_text("eastus")
    tab.screenshot("1-refused")

    # What would it take? The what-if page answers without creating anything.
    page.get_by_role("link", name="What if…").click()
    what_if = {"tenant": tenant_a.slug, "store": store.slug, "region": "eastus"}
    for field, value in what_if.items():
        page.locator("main").get_by_label(field.capitalize()).select_option(value)
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_role("heading", name="Refused")).to_be_visible()

    # An exception for this tenant, with its reason, through the rule editor.
    page.goto("/stores/rules/new/")
    page.locator("main").get_by_label("Tenant").select_option(tenant_a.slug)
    page.locator("main").get_by_label("Effect").select_option("allow")
    page.locator("main").get_by_label("Geographies").fill("US")
    page.locator("main").get_by_label("An allow-listed exception").check()
    page.locator("main").get_by_label("Reason").fill("US analytics contract, signed 2026-11")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Rule saved")).to_be_visible()

    page.goto("/stores/what-if/?" + "&".join(f"{k}={v}" for k, v in what_if.items()))
    expect(page.get_by_role("heading", name="Allowed")).to_be_visible()
    expect(page.get_by_text("US analytics contract")).to_be_visible()

    # Asked again, the binding is accepted; the worker provisions it; the operator
    # reports the migrations applied (standing in for provisioning) and it is Active.
    allowed = ask_for_binding(live_server.url, provisioning, {**body, "region": "eastus"})
    assert allowed["status"] == "requested"
    page.goto(f"/stores/bindings/{allowed['id']}/")
    tab.reload_until(page.locator("hgroup mark", has_text="Provisioned"))
    page.get_by_role("button", name="Migrations applied").click()
    expect(page.locator("hgroup mark")).to_have_text("Active")
    expect(page.locator("dd code").first).to_contain_text("local:")
    tab.screenshot("2-active")


def test_a_rule_change_flags_an_active_binding_and_the_operator_grants_an_exception(
    journey, live_server, operator, tenant_a, store, profile, regions, provisioning, celery_worker
):
    allow = rule("allow", geographies=["EU"])
    body = {"store": store.slug, "tenant": tenant_a.slug, "profile": profile.slug}
    binding = ask_for_binding(live_server.url, provisioning, {**body, "region": "westeurope"})
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open(f"/stores/bindings/{binding['id']}/")
    tab.reload_until(page.locator("hgroup mark", has_text="Provisioned"))
    page.get_by_role("button", name="Migrations applied").click()
    expect(page.locator("hgroup mark")).to_have_text("Active")

    # The default narrows to Israel: the Active binding is flagged and waits on a decision.
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    page = tab.open("/")
    expect(page.get_by_text("Store bindings wait on a decision")).to_be_visible()
    page.get_by_role("link", name=f"{store.slug} for {tenant_a.slug}").click()
    expect(page.locator("#residency-violation")).to_contain_text("westeurope")
    expect(page.locator("#migration-checklist")).to_contain_text(
        "Keep the current runtime persistence intact"
    )
    tab.screenshot("1-flagged")

    page.get_by_label("Exception reason").fill("EU hosting agreed until the move")
    page.get_by_label("Exception expires").fill("2099-01-01T00:00")
    page.get_by_role("button", name="Grant exception").click()
    expect(page.get_by_text("Exception granted; it ends by itself")).to_be_visible()
    expect(page.locator("#residency-exception")).to_contain_text("in force")
    expect(page.locator("#residency-exception")).to_contain_text("EU hosting agreed")
    expect(page.locator("#residency-violation")).to_have_count(0)
    tab.screenshot("2-excepted")


def test_a_workload_evaluation_is_done_before_the_page_answers(
    journey, operator, tenant_a, store, regions
):
    """Recording workload evidence evaluates the live bindings it concerns in the same
    request (apps.stores.services.reevaluate_bindings): no worker runs it, so the page
    that answers already shows the verdict, and there is no progress to follow."""
    from tests.stores.test_compliance import queue_binding

    rule("allow", geographies=["IL"])
    _, binding = queue_binding(tenant_a, store, regions)
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open(binding.get_absolute_url())
    expect(page.locator("#workload-violation")).to_have_count(0)

    # when the operator records the queue's dequeue benchmark as failed
    page = tab.open("/stores/evidence/benchmarks/new/")
    form = page.locator("main form")
    form.locator('[name="provider"]').select_option("postgresql")
    form.locator('[name="query_shape"]').select_option("queue_dequeue")
    form.locator('[name="profile"]').select_option(value=str(binding.profile.pk))
    form.locator('[name="figure"]').fill("12")
    form.locator('[name="threshold"]').fill("5")
    form.locator('[name="run_reference"]').fill("bench-run-regressed")
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_text("the bindings it concerns are re-evaluated")).to_be_visible()
    expect(page.locator("#progress")).to_have_count(0)

    # then the binding's page shows the new verdict at once, with nothing to wait for
    page = tab.open(binding.get_absolute_url())
    expect(page.locator("#workload-violation")).to_contain_text("Workload evidence withdrawn")
    expect(page.locator("#progress")).to_have_count(0)
    tab.screenshot("flagged")
