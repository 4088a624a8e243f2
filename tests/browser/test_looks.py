"""The console's main pages at a desktop's width and a phone's, in the light theme, and
in the dark one, with data in every dashboard chart: each page shows its heading and its
charts, none is wider than the phone's screen, the actions of the audit trail and of
the dashboard's and a tenant's recent changes wrap between their words only, axe-core
finds nothing serious on any (tests/browser/conftest.py), and each is photographed for
a person to look at."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport
from apps.eventing import lag
from apps.eventing.models import DeliveryCount
from apps.eventing.transports import stream_key
from apps.governance import install
from apps.governance.models import RetentionSweep
from apps.registry.models import SchemaVersion, Topic
from apps.tenancy.audit import audit_record
from tests.browser.conftest import NARROW, WIDE
from tests.console.chart_seed import add_recent_events, seed_every_chart
from tests.governance.factories import inbox
from tests.registry.factories import add_versions

pytestmark = pytest.mark.django_db(transaction=True)

DASHBOARD_CHARTS = (
    "events-per-minute",
    "backlog-and-lag",
    "attention-by-kind",
    "approvals-waiting",
    "bindings-by-status",
    "orders-in-flight",
)
EVENTING_CHARTS = ("events-per-minute", "throughput-per-topic", "consumer-lag", "lag-over-time")
# (screenshot's name, path, the charts it draws)
MAIN_PAGES = (
    ("dashboard", "/", DASHBOARD_CHARTS),
    ("eventing", "/eventing/", EVENTING_CHARTS),
    # A day and a week: the events and the lag over them, throughput as far as it is
    # kept (the inbox window, 3 days), said so.
    ("eventing-day", "/eventing/?range=24h", EVENTING_CHARTS),
    ("eventing-week", "/eventing/?range=7d", EVENTING_CHARTS),
    ("registry", "/registry/overview/", ("versions-per-topic", "acknowledgements-outstanding")),
    ("topics", "/registry/", ()),
    ("assets", "/assets/", ()),
    ("bindings", "/stores/", ()),
    ("orders", "/governance/", ()),
    ("sweeps", "/governance/retention/", ("last-sweep",)),
    ("tonight", "/governance/retention/preview/", ("tonight-sweep",)),
    ("attention", "/attention/", ()),
    ("audit", "/audit/", ()),
)

# The actions of an audit table whose lines end inside a word (not after a "." or "_"):
# the character on each side of every wrap, read from where the browser laid them out.
# Its argument names the action cells: the audit trail's, or a page's recent changes.
ACTIONS_CUT_MID_WORD = """(cells) => {
  const cut = [];
  const range = document.createRange();
  for (const cell of document.querySelectorAll(cells)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let top = null, before = "";
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const { top: y } = range.getBoundingClientRect();
        if (top !== null && y > top + 1 && !"._".includes(before)) {
          cut.push(`${cell.textContent} (after "${before}")`);
        }
        top = y;
        before = node.data[i];
      }
    }
  }
  return cut;
}"""
# The action cells of the pages that list audit entries.
ACTION_CELLS = {
    "audit": "table.audit tbody td:nth-child(4)",
    "dashboard": "table.recent-changes tbody td:nth-child(4)",
    "tenant": "table.recent-changes tbody td:nth-child(3)",
}


def forget_lag():
    """Redis outlives each test's database: earlier tests' lag samples would be drawn."""
    redis = get_redis()
    for key in redis.scan_iter(lag.LAG_HISTORY_KEY.format(minute="*")):
        redis.delete(key)


@pytest.fixture
def lively(tenant_a, tenant_b, store, profile, operator):
    """Every dashboard chart's rows, and an hour that looks like one: traffic rising and
    falling over the minutes on three topics, a week of consumer lag, versions over the
    weeks, a sweep done."""
    forget_lag()
    topics = [
        Topic.objects.create(name=name, current_schema_version=1)
        for name in ("shop.order", "billing.invoice", "catalog.item")
    ]
    seed_every_chart(
        tenant_a=tenant_a,
        tenant_b=tenant_b,
        topic=topics[0],
        store=store,
        profile=profile,
        operator=operator,
    )
    now = timezone.now().replace(second=0, microsecond=0)
    with system_scope():
        DeliveryCount.objects.filter(subscription=None).delete()
        DeliveryCount.objects.bulk_create(
            DeliveryCount(
                minute=now - timedelta(minutes=m),
                delivered=int(20 + 15 * math.sin(m / 6) + m % 7),
                failed=2 if m % 17 == 0 else 0,
            )
            for m in range(60)
        )
    for m in range(0, 60, 3):
        for n, topic in enumerate(topics):
            add_recent_events(tenant_a, topic, 1 + (m + 4 * n) % 5, minutes_ago=m)
    add_versions(3)
    # Releases over the weeks, not all in this one.
    for weeks, version in enumerate(
        SchemaVersion.objects.filter(topic__name__startswith="orders.")
    ):
        SchemaVersion.objects.filter(pk=version.pk).update(
            created_at=timezone.now() - timedelta(weeks=weeks % 9, days=weeks % 3)
        )
    # Steward's own rules, and rows tonight's sweep would purge under them.
    install.install_reference_data(SetupReport())
    inbox(tenant_a, 24 * 5, n=40)
    inbox(tenant_b, 24 * 9, n=15)
    add_recent_events(tenant_b, topics[1], 25, minutes_ago=60 * 24 * 6)
    RetentionSweep.objects.create(
        night=date.today() - timedelta(days=1),
        as_of=timezone.now() - timedelta(hours=20),
        finished_at=timezone.now() - timedelta(hours=20),
        status="succeeded",
        runs=1,
        results={
            "tables": {
                "inbox entries": {"rule": "steward-inbox", "rows": 1840, "batches": 4},
                "recent events": {"rule": "steward-event-receipts", "rows": 960, "batches": 2},
                "dead letters": {"rule": "steward-dead-letters", "rows": 12, "batches": 1},
            },
            "rows_purged": 2812,
        },
    )
    # A week of lag as the minute task samples it: three groups, each with its own
    # rhythm, one with a short peak every few days; the last hour minute by minute.
    lag_shapes = {
        "shop.order: reader": lambda m: 4 + 3 * math.sin(m / 37),
        "billing.invoice: invoice-mailer": lambda m: (
            180 if m // 60 % 53 == 7 else 12 + 9 * math.sin(m / 90)
        ),
        "catalog.item: search-indexer": lambda m: 30 + 26 * math.sin(m / 400),
    }
    for m in sorted({*range(0, 60), *range(60, 7 * 24 * 60, 10)}, reverse=True):
        sample = {group: max(0, round(shape(m))) for group, shape in lag_shapes.items()}
        lag.record_sample(now - timedelta(minutes=m), sample)
    # Actions longer than their column at 1280 px.
    with tenant_scope(tenant_a):
        for action in (
            "schema_version.withdraw_acknowledgement",
            "workload_evidence.contract_test",
        ):
            audit_record(actor=SYSTEM_ACTOR, action=action, instance=tenant_a, tenant=tenant_a)
    yield
    for topic in topics:
        get_redis().delete(stream_key(topic.name))
    forget_lag()


@pytest.mark.parametrize(
    ("viewport", "scheme"),
    [(WIDE, "light"), (NARROW, "light"), (WIDE, "dark"), (NARROW, "dark")],
    ids=["1280-light", "390-light", "1280-dark", "390-dark"],
)
def test_the_main_pages_read_well_wide_and_narrow_light_and_dark(
    journey, lively, operator, tenant_a, viewport, scheme
):
    tab = journey(f"{viewport['width']}px-{scheme}", viewport=viewport, color_scheme=scheme)
    tab.sign_in_as(operator)
    pages = (*MAIN_PAGES, ("tenant", tenant_a.get_absolute_url(), ()))
    for name, path, charts in pages:
        page = tab.open(path)
        expect(page.locator("main h1").first).to_be_visible()
        for key in charts:
            chart = page.locator(f'figure[data-chart="{key}"]')
            expect(chart.locator("svg")).to_be_visible()
            # Its figures are there for a screen reader, one click away for the rest.
            expect(chart.locator("details.chart-figures tbody tr").first).to_be_attached()
        if viewport is NARROW:
            tab.assert_fits_the_width()
        if name in ACTION_CELLS:
            assert page.evaluate(ACTIONS_CUT_MID_WORD, ACTION_CELLS[name]) == []
        tab.screenshot(name)


def test_the_theme_switch_turns_the_console_dark(journey, lively, operator):
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/")
    page.locator("details.dropdown summary").click()
    page.get_by_role("button", name="Dark").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator('figure[data-chart="events-per-minute"] svg')).to_be_visible()
    # The charts take the theme's colours: their text is light on the dark page.
    fill = page.evaluate("getComputedStyle(document.querySelector('figure.chart svg text')).fill")
    red, green, blue = (int(x) for x in fill.removeprefix("rgb(").rstrip(")").split(",")[:3])
    assert min(red, green, blue) > 150, fill
    tab.screenshot("dashboard-dark")
    page.locator("details.dropdown summary").click()
    page.get_by_role("button", name="Auto").click()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "dark")
