"""Start a task soon after commit, once per burst."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time

from apps.core.enqueue import send_task
from apps.core.redis import get_redis

logger = logging.getLogger(__name__)


def kick(
    task: str, key: str, *, window_ms: int = 2000, kwargs: dict | None = None, coalesce_ms: int = 0
) -> None:
    """Enqueue the task named `task` unless a kick under `key` is already pending.

    The flag collapses a burst of commits into one task; the task clears it (see
    `clear_kick`) before it looks for work, so a commit after that kicks again. A
    Redis outage only delays the work until the task's periodic sweep: it never
    fails the caller.

    With `coalesce_ms`, this process also collapses its own burst before asking
    Redis: the first kick under a key goes at once, the ones that follow within
    `coalesce_ms` become one more kick when that time is up. Every commit is still
    followed by a kick, at most `coalesce_ms` later, and an endpoint serving a
    thousand commits a second asks Redis a few times a second instead of on each.
    """
    if coalesce_ms > 0:
        _coalescer.kick(task, key, window_ms=window_ms, kwargs=kwargs, coalesce_ms=coalesce_ms)
    else:
        _send(task, key, window_ms=window_ms, kwargs=kwargs)


def _send(task: str, key: str, *, window_ms: int, kwargs: dict | None) -> None:
    try:
        if get_redis().set(key, "1", nx=True, px=window_ms):
            send_task(task, **(kwargs or {}))
    except Exception as exc:  # noqa: BLE001 - redis-py and kombu both raise on a lost Redis
        logger.warning("could not kick %s (%s); its sweep will run it", task, exc)


def clear_kick(key: str) -> None:
    with contextlib.suppress(Exception):  # without Redis the sweep covers it
        get_redis().delete(key)


class _Coalescer:
    """Per process: when each key was last sent, and the kicks due later (one per key),
    sent by one daemon thread when they are due."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)
        atexit.register(self.flush)

    def _reset(self) -> None:
        # A forked child starts afresh: the parent's thread is not there to send
        # the kicks it owed, and the parent sends them itself.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._sent_at: dict[str, float] = {}
        self._due: dict[str, tuple[float, object, int, dict | None]] = {}
        self._thread: threading.Thread | None = None

    def kick(self, task, key: str, *, window_ms: int, kwargs, coalesce_ms: int) -> None:
        now = time.monotonic()
        with self._lock:
            if key in self._due:
                return  # a kick is due after this commit already
            sent_at = self._sent_at.get(key)
            if sent_at is not None and now - sent_at < coalesce_ms / 1000:
                self._due[key] = (sent_at + coalesce_ms / 1000, task, window_ms, kwargs)
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="steward-kicks", daemon=True
                    )
                    self._thread.start()
                self._wake.notify()
                return
            self._sent_at[key] = now
        _send(task, key, window_ms=window_ms, kwargs=kwargs)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._due:
                    self._wake.wait()
                key = min(self._due, key=lambda k: self._due[k][0])
                wait = self._due[key][0] - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                _, task, window_ms, kwargs = self._due.pop(key)
                self._sent_at[key] = time.monotonic()
            _send(task, key, window_ms=window_ms, kwargs=kwargs)

    def flush(self) -> None:
        """Send every kick still due now (at exit: a stopping web worker owes them)."""
        with self._lock:
            due, self._due = self._due, {}
        for key, (_, task, window_ms, kwargs) in due.items():
            _send(task, key, window_ms=window_ms, kwargs=kwargs)


_coalescer = _Coalescer()
