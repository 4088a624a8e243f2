"""Governance journeys in a real browser: a production tenant's deletion issued by one
operator and approved by two others, followed phase by phase on the order page while
the owners answer their tasks through the API and a real worker does Steward's; an
export approved in the console, assembled by the worker and downloaded as a ZIP."""

import hashlib
import io
import json
import zipfile

import httpx
import pytest
from playwright.sync_api import expect

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.governance.models import GovernanceOrder
from apps.tenancy import services as tenancy
from apps.tenancy.models import Tenant
from tests.factories import member, service_token

# The governance tests' stores (one of each phase's category) and their settings
# (export and secret-broker directories under the test's tmp_path).
from tests.governance.conftest import bound, governance_settings  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)
TASKS = "/api/v1/governance/tasks/"


@pytest.fixture(autouse=True)
def _no_cooling_off(settings):
    # The live server and the worker run in this process: they read the same settings.
    settings.STEWARD_DELETION_GRACE_HOURS = 0


def tasks_of(page):
    return page.locator("#order-body tr[id^=task-]")


def expect_receipt_row(scope, *cells: str):
    """A receipt's item or bundle is a row of its task's receipt table (the `record`
    tag's), its values in labelled columns."""
    # the first: Steward's own receipt may list the owners' bundles again
    row = scope.locator("table.record tbody tr").filter(has_text=cells[0]).first
    expect(row).to_be_visible()
    for cell in cells:
        # (a bundle's name and store may be the same words)
        expect(row.get_by_role("cell", name=cell, exact=True).first).to_be_visible()


class Owner:
    """A platform service answering its governance tasks with its own token, as the
    services owning the tenant's stores do."""

    def __init__(self, base_url: str, name: str):
        issued = service_token(name=name, scopes=("governance:write",))
        self.http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {issued.secret}"}, timeout=15
        )

    def open_task(self) -> dict:
        """The one task the service has been issued and not yet answered."""
        answer = self.http.get(TASKS, params={"status": "issued"})
        assert answer.status_code == 200, answer.text
        [task] = answer.json()["results"]
        self.post(f"{TASKS}{task['id']}/acknowledge/")
        return task

    def complete(self, items: list[dict]) -> dict:
        task = self.open_task()
        return self.post(
            f"{TASKS}{task['id']}/complete/", json={"items": items, "digest": "ab" * 32}
        )

    def upload(self, body: bytes, media_type: str) -> dict:
        task = self.open_task()
        answer = self.http.put(
            f"{TASKS}{task['id']}/bundle/",
            content=body,
            headers={
                "Content-Type": media_type,
                "Content-SHA256": hashlib.sha256(body).hexdigest(),
            },
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    def post(self, path: str, **kwargs) -> dict:
        answer = self.http.post(path, **kwargs)
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture
def owner(live_server):
    """`owner("search")`: that service's client. Closed at the end of the test: an open
    keep-alive connection holds a server thread, and with it a database session."""
    opened: list[Owner] = []

    def speak_for(name: str) -> Owner:
        opened.append(Owner(live_server.url, name))
        return opened[-1]

    yield speak_for
    for client in opened:
        client.http.close()


def operator(username: str):
    return tenancy.user_create(
        actor=SYSTEM_ACTOR, username=username, password="correct horse battery", is_operator=True
    )


def issue_order(tab, *, tenant: str, kind: str, reason: str) -> str:
    """Request an order on the console's form; the order page's path."""
    page = tab.open("/governance/")
    page.get_by_role("button", name="New order").click()  # a link styled as one
    form = page.locator("form.stacked")  # not the header's tenant switcher
    form.locator("select[name=tenant]").select_option(tenant)
    form.locator("select[name=kind]").select_option(kind)
    form.get_by_label("Reason").fill(reason)
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Order requested; it waits for approval.")).to_be_visible()
    expect(status(page)).to_have_text("Awaiting approval")
    return page.url.removeprefix(tab.base_url)


def approve(tab, path: str, comment: str):
    page = tab.open(path)
    page.get_by_label("Comment").fill(comment)
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text(f"({comment})")).to_be_visible()
    return page


def status(page):
    return page.locator("hgroup mark")


def bar(page):
    return page.locator("progress")


def phase_states(page) -> list[str]:
    return page.locator("ol.phases > li").evaluate_all("items => items.map(i => i.dataset.state)")


# The order page asks for its moving part every 2 s while the order runs: the worker and
# the owners move the bar and the tasks without anyone reloading the page.
MOVES = 30_000


@pytest.mark.usefixtures("bound")
def test_a_production_tenant_is_deleted_phase_by_phase(journey, owner, celery_worker, tenant_a):
    Tenant.objects.filter(pk=tenant_a.pk).update(
        environment_class=Tenant.EnvironmentClass.PRODUCTION
    )
    owners = {name: owner(name) for name in ("search", "orders", "audit-log", "commercial")}
    a, b, c = journey("a", javascript=False), journey("b"), journey("c")
    a.sign_in_as(operator("ops-a"))
    b.sign_in_as(operator("ops-b"))
    c.sign_in_as(operator("ops-c"))

    # A issues the deletion (the console's forms need no JavaScript); being its
    # requester, A is offered no decision.
    path = issue_order(a, tenant="alpha", kind="deletion", reason="Contract ended: ticket 4711")
    expect(a.page.get_by_text("0 of 2 needed")).to_be_visible()
    expect(a.page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(bar(a.page)).to_have_attribute("value", "0")
    assert phase_states(a.page) == ["waiting"] * 4
    a.screenshot("1-issued")

    # B finds it waiting on the dashboard and approves: one of two.
    b.open("/")
    b.page.get_by_role("link", name="Tenant deletion of alpha").click()
    expect(b.page.get_by_text("0 of 2 needed")).to_be_visible()
    approve(b, path, "checked the contract")
    expect(status(b.page)).to_have_text("Awaiting approval")
    expect(b.page.get_by_text("1 of 2 needed")).to_be_visible()
    expect(b.page.get_by_role("button", name="Approve")).to_have_count(0)  # decided once

    # C's approval is the second: no cooling-off here, phase 1 begins at once.
    page = approve(c, path, "confirmed with the customer")
    expect(status(page)).to_have_text("Running")
    expect(page.get_by_text("2 of 2 needed")).to_be_visible()
    assert phase_states(page) == ["current", "waiting", "waiting", "waiting"]
    with system_scope():
        assert Tenant.objects.get(pk=tenant_a.pk).status == Tenant.Status.OFFBOARDING
    c.screenshot("2-approved")
    page.evaluate("window.sameDocument = true")  # gone if the page were reloaded

    # Each phase: the worker does Steward's part (half the phase), then the store's
    # owner sends its receipt and the next phase begins.
    answers = [
        ("search", "search-index", "deleted", 1200),
        ("orders", "orders-sql", "deleted", 340),
        ("audit-log", "audit-archive", "redacted", 95),
        ("commercial", "subscription", "closed", 1),
    ]
    for number, (name, what, action, count) in enumerate(answers, start=1):
        phase = page.locator("ol.phases > li").nth(number - 1)
        halfway = str(int(100 * (number - 0.5) / 4))
        expect(bar(page)).to_have_attribute("value", halfway, timeout=MOVES)
        expect(phase).to_contain_text("current (1/2 tasks)")
        assert phase_states(page) == ["done"] * (number - 1) + ["current"] + ["waiting"] * (
            4 - number
        )
        # The tasks table beside the bar moves with it.
        task_row = tasks_of(page).filter(has_text=name)
        expect(task_row).to_contain_text("Issued")
        if number == 2:
            c.screenshot("3-mid-phase")
        owners[name].complete([{"what": what, "action": action, "count": count}])
        if number < 4:
            expect(phase).to_have_attribute("data-state", "done", timeout=MOVES)
            expect_receipt_row(task_row, what, action, str(count))
            assert page.evaluate("window.sameDocument") is True

    # Completed: the page reloads itself to show the new status and the receipts.
    expect(status(page)).to_have_text("Completed", timeout=MOVES)
    expect(bar(page)).to_have_attribute("value", "100")
    assert phase_states(page) == ["done"] * 4
    for _, what, action, count in answers:
        expect_receipt_row(tasks_of(page), what, action, str(count))
    expect(page.get_by_text("chain verified")).to_be_visible()
    with system_scope():
        assert Tenant.objects.get(pk=tenant_a.pk).status == Tenant.Status.DELETED
        order = GovernanceOrder.objects.get(tenant=tenant_a)
    expect(page.locator("dd code", has_text=order.final_digest)).to_be_visible()
    c.screenshot("4-completed")
    # The requester, reading without JavaScript, sees the same on reloading.
    a.page.reload()
    expect(status(a.page)).to_have_text("Completed")
    expect(bar(a.page)).to_have_attribute("value", "100")


@pytest.mark.usefixtures("bound")
def test_an_export_is_approved_assembled_and_downloaded(
    journey, owner, celery_worker, tenant_a, tmp_path
):
    requester = member(tenant_a, role="admin", username="ada", email="ada@example.com")
    approver = member(tenant_a, role="admin", username="bob")
    mine, theirs = journey("requester"), journey("approver")
    mine.sign_in_as(requester)
    theirs.sign_in_as(approver)

    path = issue_order(mine, tenant="alpha", kind="export", reason="The customer asked: GDPR 20")
    expect(mine.page.get_by_text("0 of 1 needed")).to_be_visible()
    expect(status(approve(theirs, path, "identity checked"))).to_have_text("Running")  # at once
    page = mine.open(path)
    expect(status(page)).to_have_text("Running")

    # The owners of the stores upload their bundles: the derived search index's too.
    orders = b'{"order": 1, "customer": "ada"}\n{"order": 2, "customer": "ada"}\n'
    audit = b"# Audit archive\n\nTwo sign-ins, one export request.\n"
    search = b'{"document": "order 1", "customer": "ada"}\n'
    answer = owner("orders").upload(orders, "application/jsonl")
    assert answer["receipt"]["bundles"][0]["rows"] == 2
    owner("audit-log").upload(audit, "text/markdown")
    owner("search").upload(search, "application/jsonl")

    # The worker writes Steward's own bundle and assembles the archive; the order page,
    # open meanwhile, shows the download once it is there.
    expect(status(page)).to_have_text("Completed", timeout=MOVES)
    expect(bar(page)).to_have_attribute("value", "100")
    expect_receipt_row(tasks_of(page), "orders-sql", "jsonl", "2")
    expect_receipt_row(tasks_of(page), "audit-archive", "markdown")
    mine.screenshot("ready")
    with page.expect_download() as started:
        page.get_by_role("link", name="Download the archive").click()
    download = started.value
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)

    assert saved.name.startswith("alpha-export-") and saved.suffix == ".zip"
    data = saved.read_bytes()
    facts = page.locator("dd", has=page.get_by_role("link", name="Download the archive"))
    expect(facts.locator("code")).to_have_text(hashlib.sha256(data).hexdigest())
    archive = zipfile.ZipFile(io.BytesIO(data))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["tenant_slug"] == "alpha" and manifest["requested_by"] == "ada"
    # only Steward's tables it leaves out by design are not included
    assert {(e["owner"], e["reason"]) for e in manifest["not_included"]} == {
        ("steward", "by_design")
    }
    included = {(e["owner"], e["name"]): e["file"] for e in manifest["included"]}
    assert archive.read(included[("orders", "orders-sql")]) == orders
    assert archive.read(included[("search", "search-index")]) == search
    assert archive.read(included[("audit-log", "audit-archive")]) == audit
    assert ("steward", "tenancy.AuditEvent") in included
    assert sorted(archive.namelist()) == sorted(["manifest.json", *included.values()])
