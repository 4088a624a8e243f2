"""Sign-in resists guessing: known and unknown names answer alike, an address that fails
too often is refused before any work, a lock never shuts out someone with a second
factor, the two-factor pages share the code step's limit, enrolment ends the other
sessions, and a new sign-in returns to the tenant last chosen.

Signed in through the pages, as a browser does (tests/console/test_two_factor.py)."""

import logging

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client import REGISTRY

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import services, totp
from apps.tenancy.models import AuditEvent, TotpDevice
from tests.console.test_two_factor import (
    PASSWORD,
    clock,
    enrol,
    enrolled_member,
    give_code,
    sign_in,
)
from tests.factories import member
from tests.hashers import FewerIterationsPBKDF2PasswordHasher
from tests.support import run_concurrently

pytestmark = pytest.mark.django_db
__all__ = ["clock", "enrolled_member"]  # fixtures, shared with the two-factor tests


class CountingHasher(FewerIterationsPBKDF2PasswordHasher):
    """The test run's hasher, counting the hashes it computes (checks and stores alike)."""

    computed = 0

    def encode(self, password, salt, iterations=None):
        CountingHasher.computed += 1
        return super().encode(password, salt, iterations)


@pytest.fixture
def hashes(settings):
    # The only one, so it both stores and checks (Django checks with the last hasher of
    # an algorithm, stores with the first).
    settings.PASSWORD_HASHERS = ["tests.console.test_sign_in_limits.CountingHasher"]

    def computed() -> int:
        return CountingHasher.computed

    return computed


def answer(response) -> tuple:
    """What a person guessing sees: the status, the words, whether to wait."""
    return (
        response.status_code,
        response.context["error"] if response.context else None,
        response.has_header("Retry-After"),
    )


def attempts_counted(step: str, outcome: str) -> float:
    labels = {"step": step, "outcome": outcome}
    return REGISTRY.get_sample_value("steward_login_attempts_total", labels) or 0.0


def test_known_and_unknown_names_answer_alike_and_cost_a_hash_alike(admin_a, settings, hashes):
    settings.STEWARD_LOGIN_MAX_FAILURES = 3
    seen, costs = {}, {}
    for name in ("admin-a", "nobody-here"):
        started = hashes()
        seen[name] = [answer(sign_in(Client(), name, "wrong")) for _ in range(5)]
        costs[name] = hashes() - started
    assert seen["admin-a"] == seen["nobody-here"]
    statuses = [status for status, _, _ in seen["admin-a"]]
    assert statuses == [401, 401, 429, 429, 429]
    # every attempt was hashed, for the real account as for the name nobody has
    assert costs["admin-a"] == costs["nobody-here"] == 5


def test_an_address_that_failed_too_often_is_refused_before_any_query_or_hash(
    admin_a, settings, hashes
):
    settings.STEWARD_LOGIN_ADDRESS_MAX_FAILURES = 4
    guesser = Client()
    # forty usernames in a row no longer each get their answer
    assert [sign_in(guesser, f"guess-{i}", "wrong").status_code for i in range(4)] == [401] * 4
    started = hashes()
    with CaptureQueriesContext(connection) as queries:
        refused = sign_in(guesser, "admin-a")  # even the right password
    assert refused.status_code == 429
    assert "from your address" in refused.context["error"]
    assert int(refused["Retry-After"]) > 0
    assert (len(queries), hashes() - started) == (0, 0)
    # the person herself, from another address, is not held back
    assert sign_in(Client(REMOTE_ADDR="192.0.2.7"), "admin-a").status_code == 302


def test_a_locked_name_still_signs_in_with_password_and_code(operator, settings, clock):
    settings.STEWARD_LOGIN_MAX_FAILURES = 3
    own = Client()
    sign_in(own, "op")
    seed, _ = enrol(own)
    own.post("/logout/")
    clock.advance(totp.STEP_SECONDS)
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    assert [sign_in(attacker, "op", "wrong").status_code for _ in range(3)] == [401, 401, 429]
    with system_scope():
        assert AuditEvent.objects.filter(action="user.lock", object_id=str(operator.pk)).exists()
    # the operator, with password and code, is not locked out
    assert sign_in(own, "op")["Location"] == "/login/code/"
    assert give_code(own, clock.code(seed))["Location"] == "/"
    assert own.get("/tenants/").status_code == 200
    # and the right code lifted the name's lock
    own.post("/logout/")
    assert sign_in(own, "op")["Location"] == "/login/code/"


def test_a_locked_name_without_a_second_factor_waits(admin_a, settings):
    settings.STEWARD_LOGIN_MAX_FAILURES = 2
    for _ in range(2):
        sign_in(Client(REMOTE_ADDR="198.51.100.9"), "admin-a", "wrong")
    refused = sign_in(Client(), "admin-a")
    assert refused.status_code == 429
    assert "Too many failed sign-ins for this account" in refused.context["error"]


def test_attempts_are_logged_without_the_password_and_counted(admin_a, caplog):
    failures, successes = (
        attempts_counted("password", "failure"),
        attempts_counted("password", "success"),
    )
    with caplog.at_level(logging.WARNING, logger="apps.tenancy.attempts"):
        sign_in(Client(REMOTE_ADDR="192.0.2.44"), "admin-a", "hunter2-not-hers")
        sign_in(Client(), "admin-a")
    assert attempts_counted("password", "failure") == failures + 1
    assert attempts_counted("password", "success") == successes + 1
    [line] = [r.getMessage() for r in caplog.records if r.name == "apps.tenancy.attempts"]
    assert "192.0.2.44" in line and "failure" in line
    assert "hunter2" not in caplog.text


def test_the_two_factor_pages_share_the_code_steps_limit(enrolled_member, settings, clock):
    user, seed, codes = enrolled_member
    settings.STEWARD_LOGIN_MAX_FAILURES = 3
    client = Client()
    sign_in(client, "ada")
    assert give_code(client, clock.code(seed)).status_code == 302
    clock.advance(totp.STEP_SECONDS)
    wrong = [
        client.post("/account/two-factor/disable/", {"code": "not-a-code"}).status_code,
        client.post("/account/two-factor/recovery-codes/", {"code": "not-a-code"}).status_code,
        client.post("/account/two-factor/disable/", {"code": "not-a-code"}).status_code,
    ]
    assert wrong == [400, 400, 400]
    # now even the right code is refused, on both pages and at the sign-in code step
    for page in ("/account/two-factor/disable/", "/account/two-factor/recovery-codes/"):
        refused = client.post(page, {"code": clock.code(seed)})
        assert refused.status_code == 429, page
        assert int(refused["Retry-After"]) > 0
    assert client.post("/account/two-factor/disable/", {"code": codes[0]}).status_code == 429
    assert TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists()
    elsewhere = Client()
    sign_in(elsewhere, "ada")
    assert give_code(elsewhere, clock.code(seed)).status_code == 429


def test_enrolling_an_authenticator_ends_every_other_session(tenant_a, clock):
    member(tenant_a, username="ada")
    older, current = Client(), Client()
    sign_in(older, "ada")
    sign_in(current, "ada")
    assert older.get("/tenants/").status_code == 200
    enrol(current)
    assert older.get("/tenants/")["Location"].startswith("/login/")
    assert older.get("/api/v1/tenancy/tenants/").status_code in {401, 403}
    # the session that enrolled goes on
    assert current.get("/tenants/").status_code == 200


def test_a_new_sign_in_returns_to_the_last_chosen_tenant(client, tenant_a, tenant_b):
    user = member(tenant_a, username="ada")
    joined = services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=user, role="member")
    sign_in(client, "ada")
    assert "Acting for <strong>alpha</strong>" in client.get("/").content.decode()
    client.post("/switch-tenant/", {"tenant": str(tenant_b.pk)})
    client.post("/logout/")
    assert sign_in(client, "ada", PASSWORD)["Location"] == "/"
    assert "Acting for <strong>bravo</strong>" in client.get("/").content.decode()
    # a tenant left since is not returned to
    services.membership_remove(actor=SYSTEM_ACTOR, membership=joined)
    client.post("/logout/")
    sign_in(client, "ada")
    assert "Acting for <strong>alpha</strong>" in client.get("/").content.decode()


def test_without_redis_sign_in_stays_open_and_each_guess_is_still_a_hash(admin_a, settings, caplog):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens
    settings.STEWARD_LOGIN_MAX_FAILURES = 1
    assert [sign_in(Client(), "admin-a", "wrong").status_code for _ in range(2)] == [401, 401]
    assert sign_in(Client(), "admin-a").status_code == 302
    assert "sign-in limits unavailable" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_parallel_guesses_gets_no_more_hashes_than_the_address_limit(settings, hashes):
    settings.STEWARD_LOGIN_ADDRESS_MAX_FAILURES = 3
    names = iter(range(1000))

    def guess():
        return sign_in(Client(REMOTE_ADDR="198.51.100.77"), f"burst-{next(names)}", "wrong")

    started = hashes()
    answers, errors = run_concurrently(guess, 12)
    assert not errors, errors
    assert sorted(a.status_code for a in answers) == [401] * 3 + [429] * 9
    assert hashes() - started == 3
