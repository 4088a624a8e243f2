"""Transports: how an envelope leaves Steward. The envelope is the same on all of them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from collections.abc import Sequence

import httpx
import redis
from django.conf import settings

from apps.core.outbound import OutboundRefused, check_url, guarded_client
from apps.core.redis import REDIS_ERRORS, get_redis
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.envelope import Envelope
from apps.registry.webhook_secrets import resolve_secret

STREAM_PREFIX = "steward:stream:"
logger = logging.getLogger(__name__)


class TransportError(Exception):
    """Delivery failed; the envelope stays where it was and is tried again."""


def stream_key(topic: str) -> str:
    return f"{STREAM_PREFIX}{topic}"


def ensure_group(client: redis.Redis, stream: str, group: str, start: str = "$") -> None:
    """Create the consumer group (and the stream) unless it exists."""
    try:
        client.xgroup_create(stream, group, id=start, mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


# Per lane, the highest outbox id whose entries this Redis holds (apps.eventing.redrive).
HIGH_WATER_KEY = "steward:eventing:published"

# Publish one lane's batch only if this Redis holds everything the lane published
# before it (its high-water mark is at least ARGV[2]), then raise the mark to ARGV[3];
# else publish nothing and answer the mark it has. In one script, so no batch can go
# out ahead of older entries a Redis lost: those must be re-driven first, in order.
# KEYS: the mark's hash, then the streams; ARGV: lane, expected, new mark, then per
# entry its stream's KEYS index, envelope, event id and type.
PUBLISH_SCRIPT = """
local mark = tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')
if mark < tonumber(ARGV[2]) then return {0, mark} end
for i = 4, #ARGV, 4 do
  redis.call('xadd', KEYS[tonumber(ARGV[i])], '*', 'envelope', ARGV[i + 1],
             'event_id', ARGV[i + 2], 'event_type', ARGV[i + 3])
end
if tonumber(ARGV[3]) > mark then redis.call('hset', KEYS[1], ARGV[1], ARGV[3]) end
return {1, mark}
"""


class LaneBehind(TransportError):
    """This Redis lacks entries the lane published before: its mark is `have`."""

    def __init__(self, lane: int, have: int):
        super().__init__(f"Redis holds lane {lane} only up to {have}")
        self.lane, self.have = lane, have


class RedisStreamTransport:
    """One stream per topic; consumers read it through their own consumer group.

    Each entry carries the envelope as JSON in the field `envelope`, plus `event_id`
    and `event_type` so a consumer in any language can route without parsing.
    Publishing never trims: trimming at XADD would drop entries a slow consumer has
    not read yet. `services.streams_trim` removes what every group has consumed instead.
    """

    name = "redis_stream"
    # Streams whose Steward consumer groups this process has made sure of. Forgotten
    # after any Redis error: a Redis that came back empty needs them again.
    _followed: set[str] = set()

    def __init__(self, client=None):
        self.client = client or get_redis()

    @classmethod
    def forget_groups(cls) -> None:
        """Make sure of every group again before publishing: Redis may have lost them."""
        cls._followed.clear()

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

    def publish(
        self,
        envelopes: Sequence[Envelope],
        *,
        lane: int | None = None,
        expected: int = 0,
        through: int = 0,
        groups: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Append the envelopes to their streams, in order.

        With `lane`, as one step of that lane: only if this Redis holds the lane up to
        `expected`, and its mark then says `through` (LaneBehind otherwise, nothing
        published). `groups`: more (stream, group) to make sure of first.
        """
        try:
            pipe = self.client.pipeline(transaction=False)
            steward = self._steward_groups({envelope.topic for envelope in envelopes})
            for stream, group in [*steward, *groups]:
                pipe.xgroup_create(stream, group, id="$", mkstream=True)
            if lane is None:
                for envelope in envelopes:
                    pipe.xadd(stream_key(envelope.topic), self._fields(envelope))
            else:
                self._publish_lane(pipe, envelopes, lane, expected, through)
            results = pipe.execute(raise_on_error=False)
            for result in results:
                if isinstance(result, Exception) and "BUSYGROUP" not in str(result):
                    raise result
            self._followed.update(stream for stream, _ in steward)
        except REDIS_ERRORS as exc:
            self.forget_groups()
            raise TransportError(f"Redis: {exc}") from exc
        if lane is not None and not int(results[-1][0]):
            self.forget_groups()  # a Redis that lost entries may have lost groups too
            raise LaneBehind(lane, int(results[-1][1]))

    @staticmethod
    def _fields(envelope: Envelope) -> dict:
        return {
            "envelope": envelope.to_json(),
            "event_id": str(envelope.event_id),
            "event_type": envelope.event_type,
        }

    @staticmethod
    def _publish_lane(pipe, envelopes, lane: int, expected: int, through: int) -> None:
        keys = [HIGH_WATER_KEY]
        index: dict[str, int] = {}
        args: list = [lane, expected, through]
        for envelope in envelopes:
            stream = stream_key(envelope.topic)
            if stream not in index:
                keys.append(stream)
                index[stream] = len(keys)  # Lua counts from 1
            args += [
                index[stream],
                envelope.to_json(),
                str(envelope.event_id),
                envelope.event_type,
            ]
        pipe.eval(PUBLISH_SCRIPT, len(keys), *keys, *args)


def outbox_transport():
    """The transport the dispatcher publishes through, as `STEWARD_EVENT_TRANSPORT` says:
    Redis streams (the default) or RabbitMQ (apps.eventing.amqp). Both take the same
    `publish(envelopes, *, lane=…, expected=…, through=…, groups=…)`."""
    if settings.STEWARD_EVENTING["TRANSPORT"] == "amqp":
        from apps.eventing.amqp import AmqpTransport  # kombu only where it is chosen

        return AmqpTransport()
    return RedisStreamTransport()


def webhook_signature(secret: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (the Standard Webhooks scheme)."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


# What a failed webhook delivery says, in `last_error` and dead letters: which of these
# happened, never the peer's status or answer (whoever reads them must not learn what
# answers at an address, as from a port scanner). The detail goes to the log.
REFUSED = "refused"
TIMED_OUT = "timed out"
ANSWERED_WITH_AN_ERROR = "answered with an error"
UNREACHABLE = "unreachable"


class WebhookTransport:
    """POST the envelope, signed, to one subscription's endpoint, through the outbound
    check (apps.core.outbound): only at an address it allows, resolved at each
    connection."""

    name = "webhook"

    def __init__(self, client: httpx.Client | None = None):
        timeout = settings.STEWARD_EVENTING["WEBHOOK_TIMEOUT_SECONDS"]
        self.client = client or guarded_client(timeout=timeout)

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
            self._post(subscription, body, headers)

    def _post(self, subscription, body: bytes, headers: dict) -> None:
        def failed(reason: str, detail) -> TransportError:
            logger.warning("webhook of subscription %s: %s (%s)", subscription.pk, reason, detail)
            return TransportError(reason)

        try:
            # Checked again here, not only when it was written: a row older than the
            # check is not called either (the client checks each address it connects to).
            check_url(subscription.endpoint)
            response = self.client.post(subscription.endpoint, content=body, headers=headers)
        except OutboundRefused as exc:
            raise failed(REFUSED, exc) from exc
        except httpx.TimeoutException as exc:
            raise failed(TIMED_OUT, exc) from exc
        except httpx.ConnectError as exc:
            raise failed(REFUSED, exc) from exc
        except httpx.HTTPError as exc:
            raise failed(UNREACHABLE, exc) from exc
        if not 200 <= response.status_code < 300:
            raise failed(ANSWERED_WITH_AN_ERROR, f"HTTP {response.status_code}")
