"""Webhook endpoints Steward refuses to call, when a subscription is written: the
platform's own network (cloud metadata, private ranges, loopback…) and URLs carrying
credentials, unless an operator allowed a range (STEWARD_WEBHOOK_ALLOWED_NETWORKS)."""

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.registry import services
from apps.registry.models import Subscription
from tests.support import problem

pytestmark = pytest.mark.django_db

REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/hooks",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://10.0.0.5/hooks",
    "http://172.16.3.4/hooks",
    "http://192.168.1.1/hooks",
    "http://[fc00::1]/hooks",
    "http://127.0.0.1:6379/",
    "http://localhost:5432/",
    "http://api.localhost/",
    "http://[::1]/hooks",
    "http://[::ffff:127.0.0.1]/hooks",
    "http://0.0.0.0/hooks",
    "http://[::]/hooks",
    "http://224.0.0.1/hooks",
    "http://100.64.0.1/hooks",
    "https://user:pass@billing.example/hooks",
    "https://token@billing.example/hooks",
    "ftp://billing.example/hooks",
]


@pytest.fixture
def no_allowed_networks(settings):
    """As deployed by default: no range allowed besides public addresses."""
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = []


@pytest.fixture
def hook(api, operator, topic, monkeypatch, no_allowed_networks):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_BILLING", "x")
    api.force_login(operator)
    services.service_ensure(actor=SYSTEM_ACTOR, name="billing")

    def post(endpoint):
        body = {
            "consumer": "billing",
            "topic": topic.name,
            "transport": "webhook",
            "endpoint": endpoint,
            "secret_ref": "env:STEWARD_WEBHOOK_SECRET_BILLING",
        }
        return api.post("/api/v1/registry/subscriptions/", body, format="json")

    return post


@pytest.mark.parametrize("endpoint", REFUSED)
def test_an_endpoint_on_the_platforms_own_network_is_refused_when_written(hook, endpoint):
    problem(hook(endpoint), 400, "endpoint_not_allowed")
    assert not Subscription.objects.filter(transport="webhook").exists()


@pytest.mark.parametrize("endpoint", REFUSED[:3])
def test_an_endpoint_is_not_moved_to_the_platforms_network(api, hook, endpoint):
    created = hook("https://billing.example/hooks")
    assert created.status_code == 201, created.content
    url = f"/api/v1/registry/subscriptions/{created.json()['id']}/"
    problem(api.patch(url, {"endpoint": endpoint}, format="json"), 400, "endpoint_not_allowed")
    assert Subscription.objects.get().endpoint == "https://billing.example/hooks"


def test_a_public_endpoint_is_accepted_and_an_allowed_range_too(api, hook, settings):
    created = hook("https://billing.example/hooks")
    assert created.status_code == 201, created.content
    url = f"/api/v1/registry/subscriptions/{created.json()['id']}/"
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    moved = api.patch(url, {"endpoint": "http://10.20.3.4:8080/hooks"}, format="json")
    assert moved.status_code == 200, moved.content
    outside = api.patch(url, {"endpoint": "http://10.21.3.4:8080/hooks"}, format="json")
    problem(outside, 400, "endpoint_not_allowed")
