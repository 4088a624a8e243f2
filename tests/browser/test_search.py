"""A tenant admin finds objects from the header's search box: one match opens its
page, several are listed, another tenant's object is not found; at a desktop's width
and a phone's, without the page growing wider than the screen."""

import pytest
from playwright.sync_api import expect

from tests.assets.factories import new_asset

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_header_search_opens_lists_and_keeps_other_tenants_out(
    journey, tenant_a, tenant_b, admin_a, width
):
    mine = new_asset(tenant_a, "churn model")
    new_asset(tenant_a, "twin")
    new_asset(tenant_a, "twin")
    theirs = new_asset(tenant_b, "bravo model")
    tab = journey(f"{width}px")
    tab.page.set_viewport_size({"width": width, "height": 900})
    tab.sign_in_as(admin_a)
    page = tab.open("/")
    box = page.get_by_role("searchbox", name="Search by identifier or exact name")

    box.fill(str(mine.pk))
    box.press("Enter")
    expect(page.get_by_role("heading", name="churn model")).to_be_visible()

    box = page.get_by_role("searchbox", name="Search by identifier or exact name")
    box.fill("twin")
    box.press("Enter")
    expect(page.get_by_role("heading", name="Asset")).to_be_visible()
    expect(page.get_by_text("2 matches")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    tab.screenshot("several")

    page.get_by_role("searchbox", name="Identifier or exact name", exact=True).fill(str(theirs.pk))
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_text("Nothing found")).to_be_visible()
    tab.screenshot("nothing")
