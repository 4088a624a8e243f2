"""Two-factor sign-in through the console, with real codes computed from the seed.

These tests sign in through the login pages (not `force_login`), so the enforcement is
what a browser meets. Time is frozen: codes are computed for the clock the server reads.
"""

import base64
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from apps.core.scope import system_scope
from apps.tenancy import totp
from apps.tenancy.models import AuditEvent, RecoveryCode, TotpDevice
from tests.factories import member, service_token

PASSWORD = "correct horse battery"
pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        # The start of a time step, so a test's few steps stay inside one known window.
        now = datetime.now(UTC).replace(microsecond=0)
        self.now = now - timedelta(seconds=now.timestamp() % totp.STEP_SECONDS)

    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    def code(self, seed: bytes, *, steps: int = 0) -> str:
        return totp.totp(seed, self.now.timestamp() + steps * totp.STEP_SECONDS)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(timezone, "now", lambda: clock.now)
    return clock


def sign_in(client, username, password=PASSWORD, next_url=None):
    url = "/login/" + (f"?next={next_url}" if next_url else "")
    return client.post(url, {"username": username, "password": password})


def give_code(client, code):
    return client.post("/login/code/", {"code": code})


def enrol(client) -> tuple[bytes, list[str]]:
    """Start an enrolment, read the key off the page as a person would, confirm it."""
    assert client.post("/account/two-factor/start/").status_code == 302
    page = client.get("/account/two-factor/").content.decode()
    text = re.search(r'<code id="totp-secret">([A-Z2-7]+)</code>', page).group(1)
    seed = base64.b32decode(text + "=" * (-len(text) % 8))
    assert re.search(r"otpauth://totp/Steward:\w+\?secret=" + text, page)
    assert re.search(r'<img class="qr-code" src="data:image/svg\+xml;', page)
    confirmed = client.post(
        "/account/two-factor/confirm/", {"code": totp.totp(seed, timezone.now().timestamp())}
    )
    assert confirmed.status_code == 200, confirmed.content
    codes = re.findall(
        r"<code>([A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4}-[A-Z2-7]{4})</code>",
        confirmed.content.decode(),
    )
    assert len(codes) == 10
    return seed, codes


@pytest.fixture
def enrolled_member(client, tenant_a, clock):
    """A member with an authenticator, signed out again."""
    user = member(tenant_a, username="ada")
    sign_in(client, "ada")
    seed, codes = enrol(client)
    client.post("/logout/")
    clock.advance(totp.STEP_SECONDS)  # the enrolment's code is spent
    return user, seed, codes


def audit(**filters) -> list[AuditEvent]:
    with system_scope():  # platform-wide rows
        return list(AuditEvent.objects.filter(**filters).select_related("actor_user"))


# --------------------------------------------------------------------------- operators


CONSOLE_PAGES = [
    "/",
    "/tenants/",
    "/audit/",
    "/service-accounts/",
    "/eventing/",
    "/registry/",
    "/stores/",
    "/governance/",
    "/compute/",
    "/assets/",
    "/admin/",
]


def test_an_operator_without_authenticator_reaches_only_enrolment_and_logout(
    client, operator, clock
):
    signed_in = sign_in(client, "op", next_url="/tenants/")
    assert signed_in.status_code == 302
    assert signed_in["Location"].startswith("/account/two-factor/")
    for url in CONSOLE_PAGES:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == "/account/two-factor/", url
    # writes too, and the API with the session cookie
    assert client.post("/tenants/new/", {"slug": "x"})["Location"] == "/account/two-factor/"
    api = client.get("/api/v1/tenancy/tenants/")
    assert api.status_code == 403
    assert api.json()["code"] == "two_factor_enrolment_required"
    page = client.get("/account/two-factor/")
    assert page.status_code == 200
    assert b"Operators must set up two-factor sign-in" in page.content

    enrol(client)

    assert client.get("/tenants/").status_code == 200
    assert client.get("/api/v1/tenancy/tenants/").status_code == 200
    assert client.post("/logout/").status_code == 302


def test_service_tokens_are_not_held_to_two_factor(client, operator, clock):
    sign_in(client, "op")  # an unenrolled operator's session rides along
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {service_token(name='ci').secret}"
    assert client.get("/api/v1/tenancy/tenants/").status_code == 200


def test_an_enrolled_operator_signs_in_with_password_and_code(client, operator, clock):
    sign_in(client, "op")
    seed, _ = enrol(client)
    client.post("/logout/")
    clock.advance(totp.STEP_SECONDS)

    session = client.session  # a session id the browser had before signing in
    session["seen"] = True
    session.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
    planted = session.session_key
    step_one = sign_in(client, "op", next_url="/audit/")
    assert step_one["Location"] == "/login/code/?next=%2Faudit%2F"
    assert client.session.session_key != planted  # the password step renews the session id
    # not signed in between the two steps
    assert client.get("/")["Location"].startswith("/login/")
    step_two = client.post("/login/code/?next=/audit/", {"code": clock.code(seed)})
    assert step_two.status_code == 302
    assert step_two["Location"] == "/audit/"
    assert client.get("/audit/").status_code == 200


def test_operators_may_not_turn_two_factor_off(client, operator, clock):
    sign_in(client, "op")
    seed, _ = enrol(client)
    clock.advance(totp.STEP_SECONDS)
    refused = client.post("/account/two-factor/disable/", {"code": clock.code(seed)})
    assert refused.status_code == 409
    assert TotpDevice.objects.filter(user=operator, confirmed_at__isnull=False).exists()


def test_a_session_that_never_gave_a_code_is_signed_out(client, operator, clock):
    sign_in(client, "op")
    enrol(client)
    # as a session from before two-factor existed would be
    session = client.session
    del session["steward_two_factor"]
    session.save()
    response = client.get("/tenants/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    assert client.get("/tenants/")["Location"].startswith("/login/")


def test_an_operator_resets_a_lost_authenticator_and_it_is_audited(
    client, operator, enrolled_member, clock
):
    user, _, _ = enrolled_member
    sign_in(client, "op")
    enrol(client)
    reset = client.post("/account/two-factor/reset/", {"username": "ada"})
    assert reset.status_code == 302
    assert not TotpDevice.objects.filter(user=user).exists()
    assert not RecoveryCode.objects.filter(user=user).exists()
    [event] = audit(action="user.totp_reset", object_id=str(user.pk))
    assert event.actor_user == operator
    # and ada signs in with her password alone again (she is no operator)
    client.post("/logout/")
    assert sign_in(client, "ada")["Location"] == "/"


def test_a_reset_ends_every_open_session_of_the_person(operator, enrolled_member, clock):
    from django.test import Client

    user, seed, _ = enrolled_member
    elsewhere = Client()  # ada's session on the lost phone
    sign_in(elsewhere, "ada")
    clock.advance(totp.STEP_SECONDS)
    assert give_code(elsewhere, clock.code(seed)).status_code == 302
    assert elsewhere.get("/tenants/").status_code == 200
    resetter = Client()
    resetter.force_login(operator)
    assert resetter.post("/account/two-factor/reset/", {"username": "ada"}).status_code == 302
    assert elsewhere.get("/tenants/")["Location"].startswith("/login/")
    assert resetter.get("/tenants/").status_code == 200  # nobody else is signed out
    # and ada signs in again with her password
    assert sign_in(Client(), "ada")["Location"] == "/"


def test_the_reset_command_removes_an_operators_authenticator(client, operator, clock):
    sign_in(client, "op")
    enrol(client)
    client.post("/logout/")
    call_command("reset_totp", "op")
    assert not TotpDevice.objects.filter(user=operator).exists()
    assert audit(action="user.totp_reset", actor_label="steward")
    # next sign-in: password, then straight to enrolment
    assert sign_in(client, "op")["Location"] == "/account/two-factor/"


# --------------------------------------------------------------------------- everyone


def test_others_may_skip_two_factor(client, tenant_a, clock):
    member(tenant_a, username="bob")
    assert sign_in(client, "bob")["Location"] == "/"
    assert client.get("/").status_code == 200
    assert client.get("/tenants/").status_code == 200


def test_a_wrong_code_is_refused(client, enrolled_member, clock):
    _, seed, _ = enrolled_member
    sign_in(client, "ada")
    wrong = "000000" if clock.code(seed) != "000000" else "111111"
    refused = give_code(client, wrong)
    assert refused.status_code == 401
    assert b"Wrong code." in refused.content
    assert client.get("/")["Location"].startswith("/login/")


def test_a_code_is_not_accepted_twice(client, enrolled_member, clock):
    _, seed, _ = enrolled_member
    code = clock.code(seed)
    sign_in(client, "ada")
    assert give_code(client, code).status_code == 302
    client.post("/logout/")
    sign_in(client, "ada")
    replayed = give_code(client, code)
    assert replayed.status_code == 401
    assert b"used already" in replayed.content
    # the next step's code is fine
    clock.advance(totp.STEP_SECONDS)
    assert give_code(client, clock.code(seed)).status_code == 302


def test_a_recovery_code_signs_in_once(client, enrolled_member, clock):
    user, _, codes = enrolled_member
    sign_in(client, "ada")
    used = give_code(client, codes[0].lower())  # typed in any case
    assert used.status_code == 302
    assert client.get("/").status_code == 200
    assert RecoveryCode.objects.filter(user=user, used_at__isnull=False).count() == 1
    assert len(audit(action="user.recovery_code_use")) == 1
    client.post("/logout/")
    sign_in(client, "ada")
    assert give_code(client, codes[0]).status_code == 401


def test_failed_codes_lock_the_code_step(client, enrolled_member, clock, settings):
    user, seed, _ = enrolled_member
    settings.STEWARD_LOGIN_MAX_FAILURES = 3
    sign_in(client, "ada")
    for _ in range(2):
        assert give_code(client, "not-a-code").status_code == 401
    # the password again does not wipe the count of failed codes
    sign_in(client, "ada")
    assert give_code(client, "not-a-code").status_code == 401
    assert audit(action="user.lock", object_id=str(user.pk))
    # locked: the right code no longer helps, and the password step starts again
    locked = give_code(client, clock.code(seed))
    assert locked.status_code == 429
    assert b"Too many wrong codes" in locked.content
    assert int(locked["Retry-After"]) > 0
    assert give_code(client, clock.code(seed))["Location"] == "/login/"
    # the password is still right, but the code step stays shut until the window passes
    assert sign_in(client, "ada")["Location"] == "/login/code/"
    assert give_code(client, clock.code(seed)).status_code == 429
    assert client.get("/")["Location"].startswith("/login/")


def test_the_code_step_waits_only_so_long(client, enrolled_member, clock, settings):
    _, seed, _ = enrolled_member
    settings.STEWARD_LOGIN_CODE_SECONDS = -1
    sign_in(client, "ada")
    assert give_code(client, clock.code(seed))["Location"] == "/login/"


def test_a_member_turns_two_factor_off_with_a_code(client, enrolled_member, clock):
    user, seed, _ = enrolled_member
    sign_in(client, "ada")
    give_code(client, clock.code(seed))
    clock.advance(totp.STEP_SECONDS)
    assert client.post("/account/two-factor/disable/", {"code": "123"}).status_code == 400
    off = client.post("/account/two-factor/disable/", {"code": clock.code(seed)})
    assert off.status_code == 302
    assert not TotpDevice.objects.filter(user=user).exists()
    assert audit(action="user.totp_disable")


def test_new_recovery_codes_replace_the_old(client, enrolled_member, clock):
    _, seed, old_codes = enrolled_member
    sign_in(client, "ada")
    give_code(client, clock.code(seed))
    clock.advance(totp.STEP_SECONDS)
    page = client.post("/account/two-factor/recovery-codes/", {"code": clock.code(seed)})
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    new_codes = re.findall(r"<code>([A-Z2-7-]{19})</code>", page.content.decode())
    assert len(new_codes) == 10 and not set(new_codes) & set(old_codes)
    client.post("/logout/")
    sign_in(client, "ada")
    assert give_code(client, old_codes[1]).status_code == 401
    assert give_code(client, new_codes[0]).status_code == 302


def test_no_secret_or_code_reaches_the_audit_trail(client, enrolled_member, clock):
    user, seed, codes = enrolled_member
    sign_in(client, "ada")
    give_code(client, codes[2])
    device = TotpDevice.objects.get(user=user)
    assert totp.seed_text(seed) not in device.sealed_seed
    assert totp.unseal(device.sealed_seed) == seed
    assert not RecoveryCode.objects.filter(digest__in=codes).exists()
    events = audit(object_id=str(user.pk), object_type="tenancy.user")
    trail = " ".join(f"{e.changes} {e.object_repr}" for e in events)
    actions = {e.action for e in events}
    assert {"user.totp_enrol_start", "user.totp_enable", "user.recovery_code_use"} <= actions
    for secret in [totp.seed_text(seed), *codes, *[c.replace("-", "") for c in codes]]:
        assert secret not in trail


def test_pages_of_two_factor_read_without_javascript(client, enrolled_member, clock):
    _, seed, _ = enrolled_member
    sign_in(client, "ada")
    code_page = client.get("/login/code/").content.decode()
    give_code(client, clock.code(seed))
    page = client.get("/account/two-factor/").content.decode()
    for html in (code_page, page):
        assert "<form" in html and "<noscript" not in html
        assert not re.search(r"<script(?![^>]*\bsrc=)", html)


def test_force_login_sessions_count_as_verified_in_tests(client, operator, api):
    # tests/conftest.py: how the rest of the suite signs operators in
    client.force_login(operator)
    assert client.get("/tenants/").status_code == 200
    api.force_login(operator)
    assert api.get("/api/v1/tenancy/tenants/").status_code == 200
