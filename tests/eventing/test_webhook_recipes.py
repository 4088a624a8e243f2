"""The verification recipes in docs/integration.md, run against real signed deliveries."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumers import webhook_runner
from apps.registry.models import Subscription
from tests.eventing.factories import subscribe
from tests.support import LocalServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "integration.md"
SECRET = "whsec-recipe-7c1d"
pytestmark = pytest.mark.django_db(transaction=True)


def recipe(language: str) -> str:
    match = re.search(rf"```{language} verify-webhook\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/integration.md has no {language} verification recipe"
    return match.group(1)


@pytest.fixture
def delivery(tenant_a, topic, monkeypatch):
    """One real webhook request, as the receiver got it."""
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_RECIPE", SECRET)
    with LocalServer() as server:
        subscription = subscribe(
            topic,
            "recipe",
            transport=Subscription.Transport.WEBHOOK,
            endpoint=server.url,
            secret_ref="env:STEWARD_WEBHOOK_SECRET_RECIPE",
        )
        with tenant_scope(tenant_a):
            emit_many(
                [
                    NewEvent(
                        topic=topic.name,
                        event_type="e",
                        aggregate_type="k",
                        aggregate_id="1",
                        payload={"ok": True},
                        tenant=tenant_a,
                    )
                ]
            )
        dispatcher.drain()
        webhook_runner(subscription).read_once(get_redis())
    [received] = server.received
    return received


def test_the_python_recipe_accepts_a_real_delivery_and_refuses_tampering(delivery):
    namespace = {}
    exec(recipe("python"), namespace)  # noqa: S102 - our own documentation
    verify = namespace["verify_webhook"]
    assert verify(SECRET.encode(), delivery.headers, delivery.body)
    assert not verify(b"wrong", delivery.headers, delivery.body)
    assert not verify(SECRET.encode(), delivery.headers, delivery.body + b" ")
    stale = {**delivery.headers, "webhook-timestamp": "1000000000"}
    assert not verify(SECRET.encode(), stale, delivery.body)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here")
def test_the_node_recipe_accepts_a_real_delivery_and_refuses_tampering(delivery, tmp_path):
    module = tmp_path / "verify.js"
    module.write_text(recipe("js"))
    script = f"""
const {{ verifyWebhook }} = require({json.dumps(str(module))});
const headers = {json.dumps(delivery.headers)};
const body = Buffer.from({json.dumps(delivery.body.decode())});
console.log(JSON.stringify([
  verifyWebhook({json.dumps(SECRET)}, headers, body),
  verifyWebhook("wrong", headers, body),
  verifyWebhook({json.dumps(SECRET)}, headers, Buffer.concat([body, Buffer.from(" ")])),
]));
"""
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [True, False, False]
