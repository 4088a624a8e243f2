import uuid

import pytest
from celery.signals import setup_logging
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from apps.console.twofactor import mark_verified
from apps.core import counting
from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.registry.models import Service
from apps.stores.models import Store, StoreProfile
from apps.tenancy import services
from apps.tenancy.models import DataClass
from tests.factories import RegionFactory, TenantFactory, UserFactory, member, service_token

# Each test run gets its own cache keys (throttle counters, cached look-ups), so runs
# never see each other's state and a developer's running stack is left alone.
settings.CACHES["default"]["KEY_PREFIX"] = f"steward-test-{uuid.uuid4().hex[:8]}"
# Passwords are stored and checked with fewer PBKDF2 iterations (tests/hashers.py).
settings.PASSWORD_HASHERS = [
    "tests.hashers.FewerIterationsPBKDF2PasswordHasher",
    *settings.PASSWORD_HASHERS,
]


@setup_logging.connect
def _keep_the_suites_logging(**kwargs):
    """A worker started in the test process (celery.contrib.testing's start_worker)
    would set the root logger to its level, ERROR, for the rest of the process, and a
    later test in it would see no warning it expects; with a receiver here Celery leaves
    the logging Django configured as it is."""


@pytest.fixture(autouse=True)
def _force_login_gives_the_second_factor(monkeypatch):
    """Sessions made by `force_login` (Django's and DRF's test clients) count as
    two-factor verified, as after a password-and-code sign-in; operators in tests are
    otherwise held at the enrolment page. The tests of two-factor sign-in itself
    (tests/console/test_two_factor.py) sign in through the login pages instead.
    """
    original = Client._login

    def _login(self, user, backend=None):
        original(self, user, backend)
        session = self.session
        mark_verified(session)
        session.save()

    monkeypatch.setattr(Client, "_login", _login)


@pytest.fixture(autouse=True)
def _no_dispatcher_kicks(settings):
    # Tests run the dispatcher themselves; kicks would only queue Celery messages that
    # nobody consumes. The tests of the kick turn it back on.
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "KICK_ON_COMMIT": False}


@pytest.fixture(autouse=True)
def _steward_topics(request):
    """Steward's own topics, which a migration installs, for every database test.

    Transactional tests flush all tables, migration data included; tenant services
    emit on these topics, so they must exist in each test that may call them.
    """
    marker = request.node.get_closest_marker("django_db")
    if marker is None and "db" not in request.fixturenames:
        return
    transactional = marker is not None and (
        marker.kwargs.get("transaction") or (marker.args and marker.args[0])
    )
    request.getfixturevalue("transactional_db" if transactional else "db")
    from apps.registry.catalog import install_steward_topics

    install_steward_topics()


@pytest.fixture(autouse=True)
def _no_sign_in_failures():
    """Failed sign-ins are counted in Redis per name, person and address
    (apps.tenancy.attempts), outside any test's transaction: each test starts with none,
    so one test's wrong passwords never lock another's sign-in. (Cleared before the
    test: after it, a test may have pointed REDIS_URL at nothing.)"""
    redis = get_redis()
    stale = list(redis.scan_iter(match=f"{settings.CACHES['default']['KEY_PREFIX']}:signin:*"))
    if stale:
        redis.delete(*stale)


@pytest.fixture(autouse=True)
def no_remembered_counts():
    """A test's rows roll back but the counts a process remembers past their bound
    (apps.core.counting) stand for seconds: each test starts from none."""
    counting.forget_past_bound()


# The ranges where tests' webhook receivers listen (tests.support.LocalServer): allowed
# only where a test directory asks for it (`loopback_webhooks`), never by default.
LOOPBACK = ["127.0.0.0/8", "::1/128"]


@pytest.fixture
def loopback_webhooks(settings):
    """Webhooks may reach receivers on this machine, as an operator allows a range
    (STEWARD_WEBHOOK_ALLOWED_NETWORKS). In-process workers read the same settings."""
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    return LOOPBACK


@pytest.fixture
def region(db):
    return RegionFactory(slug="westeurope")


@pytest.fixture
def tenant_a(db, region):
    return TenantFactory(slug="alpha", home_region=region)


@pytest.fixture
def tenant_b(db, region):
    return TenantFactory(slug="bravo", home_region=region)


@pytest.fixture
def operator(db):
    return services.user_create(
        actor=SYSTEM_ACTOR, username="op", password="correct horse battery", is_operator=True
    )


@pytest.fixture
def admin_a(tenant_a):
    return member(tenant_a, role="admin", username="admin-a")


@pytest.fixture
def member_b(tenant_b):
    return member(tenant_b, role="member", username="member-b")


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def platform_token(db):
    return service_token(name="platform")


def bearer(client: APIClient, issued) -> APIClient:
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client


__all__ = ["bearer", "UserFactory"]


# The stores and governance tests share one store of personal data and one profile.
@pytest.fixture
def personal(db):
    return DataClass.objects.get_or_create(slug="personal", defaults={"name": "Personal"})[0]


@pytest.fixture
def store(db, personal):
    return Store.objects.create(
        slug="knowledge-sql",
        name="Knowledge SQL",
        owning_service=Service.objects.get_or_create(name="knowledge")[0],
        data_class=personal,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )


@pytest.fixture
def profile(db):
    return StoreProfile.objects.get_or_create(
        slug="postgres-dedicated",
        defaults={
            "name": "PostgreSQL, dedicated tables",
            "engine": "postgresql",
            "shape": "dedicated_tables",
            "provides_retention_cleanup": True,
        },
    )[0]


@pytest.fixture
def scrape():
    """Read `/metrics` into {series: value}."""

    def scrape(client=None, **headers) -> dict:
        answer = (client or Client()).get("/metrics", **headers)
        assert answer.status_code == 200, answer.content
        figures = {}
        for line in answer.content.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                figures[name] = float(value)
        return figures

    return scrape
