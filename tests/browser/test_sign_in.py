"""An operator signs in: enrols an authenticator at first sign-in, then signs in with a
password and a code; the console stays readable with JavaScript switched off."""

import base64
import time

import pytest
from playwright.sync_api import expect

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import services, totp
from apps.tenancy.models import TotpDevice

PASSWORD = "correct horse battery"
pytestmark = pytest.mark.django_db(transaction=True)


def code_for(seed: bytes, *, steps_ahead: int = 0) -> str:
    # A code already used is refused, so a second sign-in right after enrolment gives the
    # next step's code, which the allowed clock drift accepts.
    return totp.totp(seed, time.time() + steps_ahead * totp.STEP_SECONDS)


def sign_in(page, username: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_an_operator_enrols_an_authenticator_and_signs_in_with_a_code(journey):
    services.user_create(actor=SYSTEM_ACTOR, username="ops", password=PASSWORD, is_operator=True)
    tab = journey()
    page = tab.page

    # First sign-in: the password alone only reaches the enrolment page.
    sign_in(page, "ops")
    expect(page.get_by_text("Operators must set up two-factor sign-in")).to_be_visible()
    page.get_by_role("button", name="Set up an authenticator").click()
    expect(page.locator("img.qr-code")).to_be_visible()
    text = page.locator("#totp-secret").inner_text()
    seed = base64.b32decode(text + "=" * (-len(text) % 8))
    tab.screenshot("1-enrol")
    page.get_by_label("The code the app shows now").fill(code_for(seed))
    page.get_by_role("button", name="Confirm and turn on").click()
    expect(page.locator("code").filter(has_text="-")).to_have_count(10)  # recovery codes
    with system_scope():
        assert TotpDevice.objects.get(user__username="ops").confirmed_at is not None

    page.get_by_text("Continue to the console").click()
    page.locator("summary", has_text="ops").click()
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()

    # Second sign-in: password, then a wrong code is refused, then the right one.
    sign_in(page, "ops")
    expect(page.get_by_text("the code your authenticator app shows")).to_be_visible()
    page.get_by_label("Code").fill("000000" if code_for(seed, steps_ahead=1) != "000000" else "1")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    page.get_by_label("Code").fill(code_for(seed, steps_ahead=1))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    tab.screenshot("2-dashboard")


def test_the_console_reads_with_javascript_switched_off(journey, operator, tenant_a, tenant_b):
    from apps.assets import services as assets

    for name in ("forecast", "ledger export"):
        assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=name)
    assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_b, name="bravo's own")
    tab = journey(javascript=False)
    tab.sign_in_as(operator)
    page = tab.open("/")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()

    # Switching the tenant one acts for is a plain form.
    page.get_by_label("Acting for tenant").select_option(label="alpha")
    page.get_by_role("button", name="Switch").click()
    expect(page.get_by_text("Acting for alpha")).to_be_visible()

    # Lists filter, search and sort through their query strings.
    page.get_by_role("link", name="Assets", exact=True).click()
    rows = page.locator("main table tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_placeholder("Search").fill("forecast")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(1)
    rows.get_by_role("link", name="forecast").click()
    expect(page.get_by_role("heading", name="forecast")).to_be_visible()
    tab.screenshot("asset")

    # Every domain's pages read the same way; the account menu opens without a script.
    for label in ("Eventing", "Registry", "Stores", "Governance", "Retention", "Compute"):
        page.get_by_role("link", name=label, exact=True).click()
        expect(page.locator("main h1")).to_be_visible()
    page.locator("summary", has_text="op").click()
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    tab.screenshot("menu")
