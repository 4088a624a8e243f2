"""The webhook transport calls only addresses the outbound check allows (apps.core.outbound),
checked when it connects: a row written before the check, or a name whose answer changed
since it was written, still reaches nothing on the platform's own network."""

import socket
import uuid
from datetime import UTC, datetime

import pytest

from apps.eventing.envelope import Envelope
from apps.eventing.transports import TransportError, WebhookTransport
from tests.eventing.factories import webhook
from tests.support import LocalServer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhook_secret")]


def envelope(topic) -> Envelope:
    event_id = uuid.uuid4()
    return Envelope(
        event_id=event_id,
        topic=topic.name,
        event_type="e",
        schema_version=1,
        tenant_id=None,
        aggregate_type="thing",
        aggregate_id="a-1",
        occurred_at=datetime.now(UTC),
        correlation_id=str(event_id),
        causation_id="",
        payload={},
    )


def loopback_name() -> str:
    """A name (not an address, not `localhost`) this machine resolves to loopback."""
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    if not addresses or not all(a.startswith("127.") or a == "::1" for a in addresses):
        pytest.skip(f"{name} does not resolve to loopback only here")
    return name


def deliver(topic, url):
    with LocalServer() as server:
        endpoint = url.format(port=server.server.server_address[1])
        subscription = webhook(topic, endpoint, f"receiver-{uuid.uuid4().hex[:6]}")
        try:
            WebhookTransport().publish([envelope(topic)], subscription=subscription)
        finally:
            received = list(server.received)
    return received


def test_a_name_that_resolves_to_loopback_is_refused_when_connecting(topic, settings, caplog):
    # given a name the write-time check cannot judge (it is not resolved then), which
    # resolves to loopback now, and no range allowed
    url = f"http://{loopback_name()}:{{port}}/hooks"
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = []
    # when an event is delivered to it
    with pytest.raises(TransportError) as refused:
        deliver(topic, url)
    # then no connection was made, and the failure says only that it was refused
    assert str(refused.value) == "refused"
    assert "is not a public address" in caplog.text
    # while a range an operator allows is reached through the same name
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    assert len(deliver(topic, url)) == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/hooks",
        "http://[::ffff:127.0.0.1]:{port}/hooks",
        "http://user:pass@127.0.0.1:{port}/hooks",
    ],
)
def test_an_endpoint_stored_before_the_check_is_not_called(topic, settings, url):
    settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(TransportError, match="^refused$"):
        deliver(topic, url)
