"""The dashboard's charts in a real browser: the events chart switched between the last
hour, day and week, looked at on a desktop and a phone, in the light and dark themes,
its full labels kept for the pointer and the figures table."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.core.scope import system_scope
from apps.eventing.models import DeliveryCount
from tests.browser.conftest import NARROW, WIDE

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_events_chart_is_switched_between_an_hour_a_day_and_a_week(journey, operator):
    now = timezone.now().replace(second=0, microsecond=0)
    with system_scope():
        DeliveryCount.objects.bulk_create(
            DeliveryCount(minute=now - timedelta(minutes=37 * k), delivered=k % 7, failed=k % 3)
            for k in range(1, 200)
        )
    tab = journey()
    tab.sign_in_as(operator)
    page = tab.open("/")
    card = page.locator("article.chart-card").filter(has=page.locator("#chart-events-per-minute"))
    expect(card.get_by_role("heading")).to_have_text("Events per minute, last hour")
    card.get_by_role("link", name="24 h").click()
    expect(card.get_by_role("heading")).to_have_text("Events per 30 minutes, last 24 hours")
    card.get_by_role("link", name="7 d").click()
    expect(card.get_by_role("heading")).to_have_text("Events per 4 hours, last 7 days")
    expect(card.locator('[aria-current="true"]')).to_have_text("7 d")
    # Each column answers a pointer with its time and figure.
    expect(card.locator("svg rect.track title").first).to_contain_text(" in all")
    tab.screenshot("week-1280-light")

    for viewport, scheme in ((NARROW, "light"), (WIDE, "dark"), (NARROW, "dark")):
        other = journey(f"{viewport['width']}-{scheme}", viewport=viewport, color_scheme=scheme)
        other.sign_in_as(operator)
        other.open("/?range=7d")
        other.assert_fits_the_width()
        other.screenshot(f"week-{viewport['width']}-{scheme}")
