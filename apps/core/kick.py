"""Start a task soon after commit, once per burst."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def kick(task, key: str, *, window_ms: int = 2000, kwargs: dict | None = None) -> None:
    """Enqueue `task` unless a kick under `key` is already pending.

    The flag collapses a burst of commits into one task; the task clears it (see
    `clear_kick`) before it looks for work, so a commit after that kicks again. A
    Redis outage only delays the work until the task's periodic sweep: it never
    fails the caller.
    """
    from apps.core.redis import get_redis

    try:
        if get_redis().set(key, "1", nx=True, px=window_ms):
            task.apply_async(kwargs=kwargs)
    except Exception as exc:  # noqa: BLE001 - redis-py and kombu both raise on a lost Redis
        logger.warning("could not kick %s (%s); its sweep will run it", task.name, exc)


def clear_kick(key: str) -> None:
    import contextlib

    from apps.core.redis import get_redis

    with contextlib.suppress(Exception):  # without Redis the sweep covers it
        get_redis().delete(key)
