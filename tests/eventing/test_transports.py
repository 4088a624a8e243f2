"""Transports (apps.eventing.transports): signed webhooks against a real local HTTP server,
and the Redis stream transport making Steward's groups before a stream's first entry."""

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apps.core.redis import get_redis
from apps.eventing.consumers import webhook_runner
from tests.eventing.factories import SECRET, emit, publish, pump, webhook
from tests.support import LocalServer

pytestmark = pytest.mark.django_db


def verify(received, secret: str) -> bool:
    """The receiver's side of the documented recipe (docs/integration.md)."""
    signed = (
        received.headers["webhook-id"].encode()
        + b"."
        + received.headers["webhook-timestamp"].encode()
        + b"."
        + received.body
    )
    expected = base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(part.removeprefix("v1,"), expected)
        for part in received.headers["webhook-signature"].split()
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_each_envelope_is_posted_signed_and_in_order(tenant_a, topic):
    with LocalServer() as server:
        runner = webhook_runner(webhook(topic, server.url + "/hook"))
        envelopes = emit(tenant_a, topic, 3)
        pump(runner)
    assert [r.path for r in server.received] == ["/hook"] * 3
    assert [json.loads(r.body)["payload"]["n"] for r in server.received] == [0, 1, 2]
    for received, envelope in zip(server.received, envelopes, strict=True):
        assert received.headers["webhook-id"] == str(envelope.event_id)
        assert verify(received, SECRET)
        assert not verify(received, "another secret")
        assert json.loads(received.body) == envelope.to_dict()


def test_stewards_consumers_follow_a_stream_from_its_first_entry(tenant_a, topic):
    """Subscribing Steward's consumers to a new topic is an after-commit step that a
    Redis restart (or a slower refresh elsewhere) can leave undone; the dispatcher makes
    their groups before it adds the topic's first entry, so none starts after it."""
    client = get_redis()
    assert not client.exists(f"steward:stream:{topic.name}")
    publish(tenant_a, topic, 3)
    read = client.xreadgroup(
        "steward.recent-events", "probe", {f"steward:stream:{topic.name}": ">"}, count=10
    )
    assert [len(entries) for _, entries in read] == [3]


def test_the_transports_import_before_django_is_set_up():
    """A sender signing webhooks (the chaos drill's Workflow Service stand-in) imports
    `webhook_signature` before Django is set up: the transports reach no model."""
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-c", "import apps.eventing.transports"],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
