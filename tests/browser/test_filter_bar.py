"""The lists' filter bar in a real browser, with JavaScript off as a person may have it:
a filter chosen from the inline row is applied by the form, shown as a chip, and cleared
by the chip's ×; a list whose filters hide everything names them and clears them, and
offers the names like a search's typo; an empty list offers what fills it. At a
desktop's width and a phone's, light and dark, every page fits the width, axe-core finds
nothing serious (tests/browser/conftest.py), and each step is photographed for a person
to look at."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.assets.models import Asset
from apps.core.scope import tenant_scope
from tests.assets.factories import new_asset
from tests.browser.conftest import NARROW, WIDE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def assets(tenant_a, tenant_b):
    for n, name in enumerate(("acme-widgets", "acme", "big-acme", "cedar", "delta-ledger")):
        asset = new_asset(tenant_a if n % 2 else tenant_b, name)
        if n % 3 == 0:
            with tenant_scope(asset.tenant):
                Asset.objects.filter(pk=asset.pk).update(status=Asset.Status.APPROVED)


@pytest.mark.parametrize(
    ("viewport", "scheme"),
    [(WIDE, "light"), (NARROW, "light"), (WIDE, "dark"), (NARROW, "dark")],
    ids=["1280-light", "390-light", "1280-dark", "390-dark"],
)
def test_a_filter_is_chosen_shown_as_a_chip_and_cleared(
    journey, assets, operator, viewport, scheme
):
    tab = journey(
        f"{viewport['width']}px-{scheme}", viewport=viewport, color_scheme=scheme, javascript=False
    )
    tab.sign_in_as(operator)
    page = tab.open("/assets/")
    bar = page.locator("form.filter-bar")
    expect(bar.get_by_role("searchbox")).to_be_visible()
    expect(bar.locator("details.filter-more")).not_to_have_attribute("open", "")
    tab.assert_fits_the_width()
    tab.screenshot("1-unfiltered")

    bar.get_by_label("Status").select_option(label="Approved")
    bar.get_by_role("searchbox").fill("acm")
    bar.get_by_role("button", name="Apply").click()
    chips = page.locator("ul.filter-chips")
    expect(chips).to_contain_text("Status: Approved")
    expect(chips).to_contain_text("Search: acm")
    expect(page.locator("table tbody tr")).to_have_count(1)
    tab.assert_fits_the_width()
    tab.screenshot("2-filtered")

    chips.get_by_role("link", name="Clear Status").click()
    expect(chips).not_to_contain_text("Status")
    expect(page.locator("table tbody tr")).to_have_count(3)

    page.goto("/assets/?status=retired&q=acme")
    empty = page.locator("article.empty-list")
    expect(empty).to_contain_text("No assets match Search: acme and Status: Retired.")
    tab.assert_fits_the_width()
    tab.screenshot("3-hidden-by-filters")
    empty.get_by_role("link", name="Clear all").click()
    expect(page.locator("table tbody tr")).to_have_count(5)

    bar.get_by_role("searchbox").fill("delta-ledgr")
    bar.get_by_role("button", name="Apply").click()
    expect(empty).to_contain_text("Did you mean delta-ledger?")
    tab.assert_fits_the_width()
    tab.screenshot("4-did-you-mean")
    empty.get_by_role("link", name="delta-ledger").click()
    expect(page.locator("table tbody tr")).to_have_count(1)
    expect(chips).to_contain_text("Search: delta-ledger")


def test_an_empty_list_offers_what_fills_it(journey, operator):
    tab = journey(javascript=False)
    tab.sign_in_as(operator)
    page = tab.open("/assets/")
    empty = page.locator("article.empty-list")
    expect(empty).to_contain_text("No assets yet.")
    tab.screenshot("assets")
    tab.open("/eventing/dead-letters/")
    expect(page.locator("article.empty-list")).to_contain_text("No dead letters: every event")
    tab.screenshot("dead-letters")
