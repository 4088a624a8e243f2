"""Keeping the topic streams short without losing what a consumer has not read."""

from __future__ import annotations

import logging

import redis
from django.conf import settings

from apps.core.redis import get_redis
from apps.eventing.transports import stream_key
from apps.registry.selectors import topic_names

logger = logging.getLogger(__name__)


def _stream_id(value) -> tuple[int, int]:
    text = value.decode() if isinstance(value, bytes) else value
    millis, _, seq = text.partition("-")
    return int(millis), int(seq or 0)


def _consumed_floor(client, key: str, groups: list[dict]) -> str | None:
    """The id below which every group has read and acknowledged every entry."""
    floor = None
    for group in groups:
        candidate = _stream_id(group["last-delivered-id"])
        if group["pending"]:
            oldest = client.xpending(key, group["name"])["min"]
            candidate = min(candidate, _stream_id(oldest))
        floor = candidate if floor is None else min(floor, candidate)
    return None if floor is None else f"{floor[0]}-{floor[1]}"


def trim_streams() -> dict[str, int]:
    """Trim each topic's stream to what its groups still need, within the hard cap.

    Entries every consumer group has acknowledged are removed (XTRIM MINID). A stream
    still longer than STREAM_MAXLEN is cut to it, and the groups that lose unread
    entries that way are named in an error: a consumer that far behind is broken,
    and memory must not run out because of it.
    """
    client = get_redis()
    cap = settings.STEWARD_EVENTING["STREAM_MAXLEN"]
    trimmed: dict[str, int] = {}
    for topic in topic_names():
        key = stream_key(topic)
        try:
            groups = client.xinfo_groups(key)
        except redis.ResponseError:
            continue  # no stream yet
        removed = 0
        floor = _consumed_floor(client, key, groups)
        if floor is not None:
            removed += client.xtrim(key, minid=floor, approximate=False)
        if client.xlen(key) > cap:
            first_kept = None
            removed_by_cap = client.xtrim(key, maxlen=cap, approximate=False)
            removed += removed_by_cap
            info = client.xinfo_stream(key)
            if info.get("first-entry"):
                first_kept = _stream_id(info["first-entry"][0])
            behind = [
                g["name"].decode() if isinstance(g["name"], bytes) else g["name"]
                for g in groups
                if first_kept and _stream_id(g["last-delivered-id"]) < first_kept
            ]
            logger.error(
                "stream %s over its cap of %s: %s unread entries dropped for %s",
                key,
                cap,
                removed_by_cap,
                ", ".join(behind) or "no group",
            )
        if removed:
            trimmed[topic] = removed
    return trimmed
