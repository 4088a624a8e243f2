"""A console page reads its session and its person through apps.tenancy.auth_cache:
once cached, neither costs a statement, and every change that ends or alters a
session (a sign-out, a tenant switch, a second factor reset, a deactivated or deleted
account) is seen at the very next request, whichever web process answers it."""

import hashlib
import json

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.tenancy import auth_cache, services
from apps.tenancy.models import TotpDevice, User
from tests.factories import UserFactory, member

PAGE = "/assets/"


def _signed_out(answer) -> bool:
    return answer.status_code == 302 and answer.url.startswith(reverse(settings.LOGIN_URL))


def _tables(queries) -> str:
    return " ".join(q["sql"] for q in queries)


def _twin_of(session_key: str) -> Client:
    other = Client()
    other.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return other


def _twin(client) -> Client:
    """Another browser tab on the same session (and, as far as the cache goes, another
    web process: the two share only PostgreSQL and Redis)."""
    return _twin_of(client.cookies[settings.SESSION_COOKIE_NAME].value)


@pytest.fixture
def signed_in(client, tenant_a):
    person = member(tenant_a, role="admin")
    client.force_login(person)
    assert client.get(PAGE).status_code == 200  # fills the cache
    return client, person


@pytest.mark.django_db
def test_a_cached_session_and_person_cost_no_statement(signed_in):
    client, person = signed_in
    with CaptureQueriesContext(connection) as seen:
        page = client.get(PAGE)
    assert page.status_code == 200 and page.wsgi_request.user == person
    assert "django_session" not in _tables(seen.captured_queries)
    assert "tenancy_user" not in _tables(seen.captured_queries)


@pytest.mark.django_db
def test_redis_holds_neither_the_session_key_nor_the_password_hash(signed_in):
    client, person = signed_in
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    stored = b" ".join(get_redis().get(name) or b"" for name in get_redis().keys("steward:auth:*"))
    assert key.encode() not in b" ".join(get_redis().keys("*")) and key.encode() not in stored
    person.refresh_from_db()
    assert person.password.encode() not in stored
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert json.loads(get_redis().get(f"steward:auth:session:{digest}"))["data"]


@pytest.mark.django_db
def test_a_sign_out_ends_the_session_in_every_tab_at_once(signed_in):
    client, _ = signed_in
    other = _twin(client)
    assert other.get(PAGE).status_code == 200
    assert client.post("/logout/").status_code == 302
    assert _signed_out(other.get(PAGE))


@pytest.mark.django_db
def test_a_tenant_switch_in_one_tab_is_seen_by_the_other_at_once(signed_in, tenant_b):
    client, person = signed_in
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=person, role="member")
    other = _twin(client)
    assert other.get(PAGE).wsgi_request.tenant.pk != tenant_b.pk
    client.post("/switch-tenant/", {"tenant": str(tenant_b.pk), "next": PAGE})
    assert other.get(PAGE).wsgi_request.tenant.pk == tenant_b.pk


@pytest.mark.django_db
def test_a_deactivated_account_is_signed_out_at_once(signed_in):
    client, person = signed_in
    person.is_active = False
    person.save(update_fields=["is_active"])
    assert _signed_out(client.get(PAGE))


@pytest.mark.django_db
def test_a_deleted_account_is_signed_out_at_once(client):
    person = UserFactory()  # no membership: nothing else goes with it
    client.force_login(person)
    assert client.get(PAGE).status_code == 200
    assert client.get(PAGE).wsgi_request.user == person
    User.objects.filter(pk=person.pk).delete()  # a queryset delete still signals
    assert _signed_out(client.get(PAGE))


@pytest.mark.django_db
def test_a_second_factor_reset_ends_the_cached_session_at_once(signed_in):
    client, person = signed_in
    TotpDevice.objects.create(user=person, sealed_seed="x")
    services.totp_reset(actor=SYSTEM_ACTOR, user=person)  # a queryset update of the account
    assert _signed_out(client.get(PAGE))


@pytest.mark.django_db
def test_a_password_change_ends_the_cached_session_and_the_cached_account_checks_it(signed_in):
    client, person = signed_in
    cached = client.get(PAGE).wsgi_request.user
    # The cached account never held the password: checking one reads it from PostgreSQL.
    assert "password" in cached.get_deferred_fields()
    assert cached.check_password("correct horse battery")
    person.set_password("another horse entirely")
    person.save()
    assert _signed_out(client.get(PAGE))


@pytest.mark.django_db
def test_entries_read_under_an_older_generation_are_not_used(signed_in):
    client, person = signed_in
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    user, generation = auth_cache.person_lookup(person.pk)
    assert user == person and user.username == person.username
    auth_cache.person_invalidate(person.pk)
    auth_cache.person_store(person, generation)
    assert auth_cache.person_lookup(person.pk)[0] is None

    row, generation = auth_cache.session_lookup(key)
    assert row is not None
    auth_cache.session_invalidate(key)
    auth_cache.session_store(key, row["data"], row["expire_date"], generation, person=None)
    assert auth_cache.session_lookup(key)[0] is None


@pytest.mark.django_db
def test_sessions_and_people_are_read_from_postgresql_when_redis_does_not_answer(
    signed_in, monkeypatch
):
    client, person = signed_in

    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens
    with CaptureQueriesContext(connection) as seen:
        page = client.get(PAGE)
    assert page.status_code == 200 and page.wsgi_request.user == person
    assert "django_session" in _tables(seen.captured_queries)
    assert "tenancy_user" in _tables(seen.captured_queries)
    # Signing out still works: the row is gone from PostgreSQL, the record.
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.post("/logout/").status_code == 302
    assert _signed_out(_twin_of(key).get(PAGE))
    # What Redis kept from before it went away, it keeps for TTL_SECONDS at most: the
    # bound on an invalidation Redis never received.
    monkeypatch.undo()
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert 0 < get_redis().ttl(f"steward:auth:session:{digest}") <= auth_cache.TTL_SECONDS


class _AuthCommands:
    """The commands a block sends Redis about who is calling (keys steward:auth:*),
    counted as redis-py sends them: nothing is stood in for."""

    def __init__(self, monkeypatch):
        self.sent: list[str] = []
        send = redis.Redis.execute_command

        def counted(client, *args, **options):
            if any(str(arg).startswith("steward:auth:") for arg in args[1:]):
                self.sent.append(str(args[0]))
            return send(client, *args, **options)

        monkeypatch.setattr(redis.Redis, "execute_command", counted)


@pytest.mark.django_db
@pytest.mark.parametrize("operator", [False, True])
def test_a_console_page_asks_redis_who_is_calling_once(
    client, tenant_a, monkeypatch, operator, django_capture_on_commit_callbacks
):
    # given a person signed in, whose session, account and memberships (an operator's:
    # the tenants they may switch to, kept once the page's transaction commits) the
    # cache holds after a first page
    person = UserFactory(is_staff=True) if operator else member(tenant_a, role="admin")
    client.force_login(person)
    page = "/eventing/" if operator else PAGE
    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(page).status_code == 200
    # when they open the page again
    seen = _AuthCommands(monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        answer = client.get(page)
    # then one script read all of it, and PostgreSQL none of it
    assert answer.status_code == 200 and answer.wsgi_request.user == person
    assert seen.sent == ["EVALSHA"]
    read = _tables(queries.captured_queries)
    assert "django_session" not in read and "tenancy_user" not in read
    assert "tenancy_membership" not in read and "tenancy_tenant" not in read


@pytest.mark.django_db
def test_what_is_read_with_the_session_serves_one_look_up_and_a_change_forgets_it(
    signed_in, monkeypatch
):
    client, person = signed_in
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    seen = _AuthCommands(monkeypatch)
    with auth_cache.reads_together():
        row, _ = auth_cache.session_lookup(key)
        user, _ = auth_cache.person_lookup(person.pk)
        held, _ = auth_cache.memberships_lookup(person.pk)
        assert row is not None and user == person and [m.user_id for m in held] == [person.pk]
        assert seen.sent == ["EVALSHA"]
        # taken once: asked again, the person is read from Redis
        assert auth_cache.person_lookup(person.pk)[0] == person
        assert seen.sent == ["EVALSHA", "MGET"]
    with auth_cache.reads_together():
        auth_cache.session_lookup(key)
        # a change in the request (here, to a membership) makes what was read stale
        auth_cache.invalidate()
        auth_cache.memberships_lookup(person.pk)
        assert seen.sent[2:] == ["EVALSHA", "INCRBY", "MGET"]


@pytest.mark.django_db
def test_a_session_entry_that_names_no_person_is_read_as_before(signed_in, monkeypatch):
    # an entry written by the release before this one, without its person's id
    client, person = signed_in
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    row, generation = auth_cache.session_lookup(key)
    auth_cache.session_store(key, row["data"], row["expire_date"], generation, person=None)
    seen = _AuthCommands(monkeypatch)
    answer = client.get(PAGE)
    assert answer.status_code == 200 and answer.wsgi_request.user == person
    assert seen.sent == ["EVALSHA", "MGET", "MGET"]
