"""Every console link reachable from the dashboard, for each demo role (an operator, a
tenant admin, a member), followed in Chromium to depth 2: no page answers a 5xx, nor a
4xx that is not Steward's own page (templates/error.html, with the way back); no link
in the menu refuses the person it is shown to; no table cell shows Python's `None`,
`True`, `False` or a dict (`{'`); and no list's column is cut off at 1280 px (the
audit trail's Changes included). axe-core checks each page as every journey does.

Links are followed as a person would: same-origin GETs only, not the sign-out, not a
download, not the Django admin or the API; one page per path pattern (identifiers and
numbers alike), so forty assets are one asset page.
"""

from __future__ import annotations

import re
import time
from collections import deque
from urllib.parse import urlsplit

import pytest

from apps.core import setup
from apps.core.redis import get_redis
from apps.core.scope import system_scope
from apps.eventing.transports import stream_key
from apps.registry.models import Service, Topic
from apps.stores.models import Store, StoreProfile
from apps.tenancy.demo import demo_tenant
from apps.tenancy.models import User
from tests.console.chart_seed import seed_every_chart

pytestmark = pytest.mark.django_db(transaction=True)

DEPTH = 2
ROLES = ("operator", "acme-admin", "globex-member")
SKIPPED = re.compile(r"^/(admin|api|static|media)/|logout|download|export|\.(json|csv|zip)$")
IDENTIFIER = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?<=/)\d+(?=/)"
)
LINKS = """() => [...document.querySelectorAll("a[href]")]
  .filter((a) => !a.hasAttribute("download"))
  .map((a) => a.href)"""
RAW_CELLS = """() => [...document.querySelectorAll("td, th[scope=row]")]
  .map((cell) => cell.innerText.trim())
  .filter((text) => ["None", "True", "False"].includes(text) || text.includes("{'"))"""
# A list page's columns past the right edge of a 1280 px window (its table scrolled to
# the start): each list chooses the columns it shows at this width (Column.shows).
CUT_OFF = """() => [
  ...document.querySelectorAll("form.filters ~ .overflow-auto > table > thead th")]
  .filter((th) => th.getBoundingClientRect().width > 0
    && th.getBoundingClientRect().right > window.innerWidth + 1)
  .map((th) => th.innerText.trim() || "(actions)")"""
IS_STEWARDS_PAGE = "() => document.body.classList.contains('steward-error')"


@pytest.fixture
def demo(personal):
    """The demo's people and tenants, with a little of everything each page lists."""
    setup.run_setup(demo=True)
    operator = User.objects.get(username="operator")
    with system_scope():
        topic = Topic.objects.create(name="shop.order", current_schema_version=1)
        profile = StoreProfile.objects.order_by("slug").first()
        store = Store.objects.create(
            slug="crawl-sql",
            name="Crawl SQL",
            owning_service=Service.objects.get_or_create(name="crawl")[0],
            data_class=personal,
            category=Store.Category.AUTHORITATIVE,
            workload_class="catalog",
        )
    seed_every_chart(
        tenant_a=demo_tenant("acme"),
        tenant_b=demo_tenant("globex"),
        topic=topic,
        store=store,
        profile=profile,
        operator=operator,
    )
    yield
    get_redis().delete(stream_key(topic.name))


def _pattern(path: str) -> str:
    return IDENTIFIER.sub("<id>", path)


def crawl(tab, base_url: str) -> tuple[int, list[str]]:
    """Breadth-first from the dashboard; (pages opened, what was wrong on them)."""
    problems: list[str] = []
    seen = {_pattern("/")}
    queue = deque([("/", 0, "the dashboard")])
    menu = set()
    opened = 0
    while queue:
        path, depth, came_from = queue.popleft()
        response = tab.page.goto(path)
        opened += 1
        status = response.status if response else 0
        if status >= 500:
            # Steward's own 500 page is still a failure on a main path.
            problems.append(f"{path} ({status}, from {came_from}): a server error")
            continue
        if status >= 400:
            if not tab.page.evaluate(IS_STEWARDS_PAGE):
                problems.append(f"{path} ({status}, from {came_from}): not Steward's page")
            elif path in menu:
                problems.append(f"{path} ({status}): the menu links a page it refuses")
            continue
        for text in tab.page.evaluate(RAW_CELLS):
            problems.append(f"{path}: a cell shows {text[:60]!r}")
        cut = tab.page.evaluate(CUT_OFF)
        if cut:
            problems.append(f"{path}: columns off a 1280 px screen: {', '.join(cut)}")
        if depth == 0:
            menu = set(
                tab.page.eval_on_selector_all(
                    'nav[aria-label="Domains"] a[href]', "(links) => links.map((a) => a.pathname)"
                )
            )
        if depth >= DEPTH:
            continue
        for href in tab.page.evaluate(LINKS):
            parts = urlsplit(href)
            if f"{parts.scheme}://{parts.netloc}" != base_url or SKIPPED.search(parts.path):
                continue
            key = _pattern(parts.path)
            if key not in seen:
                seen.add(key)
                target = parts.path + (f"?{parts.query}" if parts.query else "")
                queue.append((target, depth + 1, path))
    return opened, problems


@pytest.mark.parametrize("role", ROLES)
def test_every_page_a_role_reaches_from_the_dashboard_reads_well(journey, demo, role):
    tab = journey(role)
    tab.sign_in_as(User.objects.get(username=role))
    started = time.monotonic()
    opened, problems = crawl(tab, tab.base_url)
    took = time.monotonic() - started
    assert opened >= 15, f"{role} reached only {opened} pages"
    assert not problems, f"{role}, {opened} pages in {took:.0f}s:\n" + "\n".join(problems)
