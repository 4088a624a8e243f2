"""Keeping the topic streams short without losing what a consumer has not read: the
mechanics of `services.streams_trim`."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def _stream_id(value) -> tuple[int, int]:
    text = value.decode() if isinstance(value, bytes) else value
    millis, _, seq = text.partition("-")
    return int(millis), int(seq or 0)


def consumed_floor(client, key: str, groups: list[dict]) -> str | None:
    """The id below which every group has read and acknowledged every entry."""
    floor = None
    for group in groups:
        candidate = _stream_id(group["last-delivered-id"])
        if group["pending"]:
            oldest = client.xpending(key, group["name"])["min"]
            candidate = min(candidate, _stream_id(oldest))
        floor = candidate if floor is None else min(floor, candidate)
    return None if floor is None else f"{floor[0]}-{floor[1]}"


def cut_to_cap(client, key: str, groups: list[dict], cap: int) -> int:
    """Cut the stream to `cap` entries, naming in an error the groups that lose unread
    entries that way; how many entries were removed."""
    first_kept = None
    removed = client.xtrim(key, maxlen=cap, approximate=False)
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
        removed,
        ", ".join(behind) or "no group",
    )
    return removed
