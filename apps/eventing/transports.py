"""Transports: how an envelope leaves Steward. The envelope is the same on all of them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Sequence

import httpx
from django.conf import settings

from apps.core.redis import REDIS_ERRORS, get_redis
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.envelope import Envelope
from apps.registry.webhook_secrets import resolve_secret

STREAM_PREFIX = "steward:stream:"


class TransportError(Exception):
    """Delivery failed; the envelope stays where it was and is tried again."""


def stream_key(topic: str) -> str:
    return f"{STREAM_PREFIX}{topic}"


class RedisStreamTransport:
    """One stream per topic; consumers read it through their own consumer group.

    Each entry carries the envelope as JSON in the field `envelope`, plus `event_id`
    and `event_type` so a consumer in any language can route without parsing.
    Publishing never trims: trimming at XADD would drop entries a slow consumer has
    not read yet. `trim_streams` removes what every group has consumed instead.
    """

    name = "redis_stream"
    # Streams whose Steward consumer groups this process has made sure of. Forgotten
    # after any Redis error: a Redis that came back empty needs them again.
    _followed: set[str] = set()

    def __init__(self, client=None):
        self.client = client or get_redis()

    def _steward_groups(self, topics: set[str]) -> list[tuple[str, str]]:
        """(stream, group) of Steward's own consumers for streams not yet made sure of.

        Created before the first entry, so no group starts after it: subscribing on a
        topic's creation is an after-commit step that a Redis restart, or another
        process's slower refresh, can leave undone until events have gone by.
        """
        return [
            (stream_key(topic), handler.consumer)
            for topic in sorted(topics)
            if stream_key(topic) not in self._followed
            for handler in HANDLERS.values()
            if handler.topics is None or topic in handler.topics
        ]

    def publish(self, envelopes: Sequence[Envelope]) -> None:
        try:
            pipe = self.client.pipeline(transaction=False)
            groups = self._steward_groups({envelope.topic for envelope in envelopes})
            for stream, group in groups:
                pipe.xgroup_create(stream, group, id="$", mkstream=True)
            for envelope in envelopes:
                pipe.xadd(
                    stream_key(envelope.topic),
                    {
                        "envelope": envelope.to_json(),
                        "event_id": str(envelope.event_id),
                        "event_type": envelope.event_type,
                    },
                )
            for result in pipe.execute(raise_on_error=False):
                if isinstance(result, Exception) and "BUSYGROUP" not in str(result):
                    raise result
            self._followed.update(stream for stream, _ in groups)
        except REDIS_ERRORS as exc:
            self._followed.clear()
            raise TransportError(f"Redis: {exc}") from exc


def webhook_signature(secret: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (the Standard Webhooks scheme)."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


class WebhookTransport:
    """POST the envelope, signed, to one subscription's endpoint."""

    name = "webhook"

    def __init__(self, client: httpx.Client | None = None):
        timeout = settings.STEWARD_EVENTING["WEBHOOK_TIMEOUT_SECONDS"]
        self.client = client or httpx.Client(timeout=timeout, follow_redirects=False)

    def publish(self, envelopes: Sequence[Envelope], *, subscription) -> None:
        # Resolved at each delivery, so a rotated secret is used at once
        # (apps.registry.webhook_secrets: the subscription holds only its reference).
        secret = resolve_secret(subscription.secret_ref)
        for envelope in envelopes:
            body = envelope.to_json().encode()
            webhook_id = str(envelope.event_id)
            timestamp = int(time.time())
            headers = {
                "content-type": "application/json",
                "webhook-id": webhook_id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": webhook_signature(secret, webhook_id, timestamp, body),
                "user-agent": "Steward-Webhooks/1",
            }
            try:
                response = self.client.post(subscription.endpoint, content=body, headers=headers)
            except httpx.TimeoutException as exc:
                raise TransportError(f"timed out after {self.client.timeout.read}s") from exc
            except httpx.HTTPError as exc:
                raise TransportError(f"{type(exc).__name__}: {exc}") from exc
            if not 200 <= response.status_code < 300:
                raise TransportError(f"HTTP {response.status_code}")
