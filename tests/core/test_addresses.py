"""The client's address: X-Forwarded-For is believed only from configured proxies, for
the API's rate limit and the sign-in limits alike (apps.core.addresses)."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from apps.core.addresses import client_address
from portal import settings as portal_settings
from tests.support import problem

SCHEMA = "/api/schema/"  # answers anonymous callers, under the anonymous rate


def address(remote: str, forwarded: str | None = None) -> str:
    headers = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        headers["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(RequestFactory().get("/", **headers))


def test_without_trusted_proxies_the_header_is_ignored(settings):
    settings.STEWARD_TRUSTED_PROXIES = []
    assert address("198.51.100.7", "203.0.113.1") == "198.51.100.7"
    assert address("198.51.100.7") == "198.51.100.7"


def test_behind_trusted_proxies_the_first_untrusted_hop_from_the_right_is_the_client(settings):
    settings.STEWARD_TRUSTED_PROXIES = ["10.0.0.0/8", "fd00::/8"]
    assert address("10.0.0.2", "203.0.113.1") == "203.0.113.1"
    # hops the client wrote itself, left of the last untrusted one, are not believed
    assert address("10.0.0.2", "1.2.3.4, 203.0.113.1, 10.0.0.9") == "203.0.113.1"
    assert address("fd00::2", "2001:db8::5") == "2001:db8::5"
    # a peer that is no proxy of ours cannot speak for anyone else
    assert address("198.51.100.7", "203.0.113.1") == "198.51.100.7"
    # garbage ends the reading at the last trusted hop
    assert address("10.0.0.2", "203.0.113.1, not-an-address") == "10.0.0.2"
    assert address("10.0.0.2", "") == "10.0.0.2"


@pytest.mark.django_db
def test_a_varied_header_does_not_lift_the_anonymous_api_rate(settings):
    settings.STEWARD_TRUSTED_PROXIES = []
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "2/min"},
    }
    caller = APIClient(REMOTE_ADDR="198.51.100.23")
    statuses = [
        caller.get(SCHEMA, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code for i in range(2)
    ]
    assert statuses == [200, 200]
    refused = caller.get(SCHEMA, {"format": "json"}, HTTP_X_FORWARDED_FOR="203.0.113.99")
    problem(refused, 429, "throttled")
    # in the schema's own YAML too, not a server error
    assert caller.get(SCHEMA).status_code == 429


@pytest.mark.django_db
def test_clients_behind_a_trusted_proxy_are_counted_apart(settings):
    settings.STEWARD_TRUSTED_PROXIES = ["10.0.0.0/8"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "1/min"},
    }
    proxy = APIClient(REMOTE_ADDR="10.0.0.2")
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 200
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="203.0.113.10").status_code == 429
    assert proxy.get(SCHEMA, HTTP_X_FORWARDED_FOR="203.0.113.11").status_code == 200


@pytest.mark.django_db
def test_a_varied_header_does_not_lift_the_sign_in_limit(settings):
    settings.STEWARD_TRUSTED_PROXIES = []
    settings.STEWARD_LOGIN_ADDRESS_MAX_FAILURES = 3
    guesser = Client(REMOTE_ADDR="198.51.100.24")

    def guess(i):
        return guesser.post(
            "/login/",
            {"username": f"guess-{i}", "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"203.0.113.{i}",
        ).status_code

    assert [guess(i) for i in range(4)] == [401, 401, 401, 429]


def test_a_trusted_proxy_that_is_no_network_stops_the_start(monkeypatch):
    monkeypatch.setenv("STEWARD_TRUSTED_PROXIES", "10.0.0.0/8, proxy.internal")
    with pytest.raises(ImproperlyConfigured, match="proxy.internal"):
        portal_settings.networks("STEWARD_TRUSTED_PROXIES")
    monkeypatch.setenv("STEWARD_TRUSTED_PROXIES", "10.0.0.0/8, 2001:db8::/32")
    assert portal_settings.networks("STEWARD_TRUSTED_PROXIES") == ["10.0.0.0/8", "2001:db8::/32"]


@pytest.mark.django_db
def test_metrics_behind_a_trusted_proxy_look_at_the_client_not_the_proxy(settings, scrape):
    # a proxy on the same machine: every caller it forwards arrives from loopback
    settings.STEWARD_TRUSTED_PROXIES = ["127.0.0.1/32"]
    forwarded = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert forwarded.get("/metrics").status_code == 403
    scrape(Client(REMOTE_ADDR="127.0.0.1"))  # a scraper on the machine itself still may
