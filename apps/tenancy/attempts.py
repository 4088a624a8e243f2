"""Failed sign-in attempts, counted in Redis: the one mechanism behind every limit on
guessing (the password step, the code step, the two-factor pages).

Each limit keeps, per key, the times of its latest failures in a sorted set over a
sliding window (`STEWARD_LOGIN_LOCKOUT_SECONDS`); a key with as many failures as its
limit allows is *blocked* until the oldest of them leaves the window. Asking costs one
Redis round trip and nothing else, so a blocked attempt is refused before PostgreSQL
or the password hasher is touched: a flood of guesses costs Steward next to nothing
once it is blocked.

The limits:
- `PASSWORD`, per username as typed (case folded), whether or not anyone has it, so
  a locked name answers as an unknown one would after as many failures. It bars the
  password alone; the right password and a second factor still sign in.
- `CODE`, per person: wrong authenticator and recovery codes, at the code step of a
  sign-in and on the two-factor pages alike. Reaching it takes the password, and it
  bars the right code too until the window passes.
- `ADDRESS`, per client address (apps.core.addresses): every failure from it; blocked,
  it is refused everything for a while, whatever name it tries next.

Redis not answering leaves the limits open (logged): sign-in stays possible, and each
guess still costs a password hash.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from prometheus_client import Counter

from apps.core.redis import REDIS_ERRORS, get_redis, script

logger = logging.getLogger(__name__)

ATTEMPTS = Counter(
    "steward_login_attempts",
    "Console sign-in attempts, by step (password, code) and outcome "
    "(success, failure, locked, throttled).",
    ["step", "outcome"],
)

# KEYS[1]: the limit's key. ARGV: now, window (s), limit, mode, member. Modes: `check`;
# `add` a failure; `reserve`, add one only if not blocked already, in the same step, so
# that parallel attempts cannot all pass a check before any of them is counted. Keeps
# only the newest `limit` failures inside the window. Answers {failures, the oldest
# kept failure's time}: after an `add`, before a `reserve` (blocked: as many as the
# limit).
_FAILURES = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local mode = ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local failures = redis.call('ZCARD', key)
if mode == 'add' or (mode == 'reserve' and failures < limit) then
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))
  redis.call('PEXPIRE', key, math.ceil(window * 1000))
  if mode == 'add' then
    failures = redis.call('ZCARD', key)
  end
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {failures, oldest[2] or '0'}
"""


@dataclass(frozen=True)
class Limit:
    name: str
    setting: str  # the setting holding how many failures the window allows

    def key(self, ident: str) -> str:
        # Digested: a username or address is never a Redis key as typed.
        digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
        prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
        return f"{prefix}:signin:{self.name}:{digest}"

    @property
    def allowed(self) -> int:
        return getattr(settings, self.setting)


PASSWORD = Limit("password", "STEWARD_LOGIN_MAX_FAILURES")
CODE = Limit("code", "STEWARD_LOGIN_MAX_FAILURES")
ADDRESS = Limit("address", "STEWARD_LOGIN_ADDRESS_MAX_FAILURES")


def username_ident(username: str) -> str:
    return username.casefold()


def _window() -> float:
    return settings.STEWARD_LOGIN_LOCKOUT.total_seconds()


def _run(limit: Limit, ident: str, mode: str, member: str = "") -> float:
    """Seconds until `ident` may try again under `limit`; 0 when it may now."""
    now, window = time.time(), _window()
    try:
        failures, oldest = script(_FAILURES)(
            keys=[limit.key(ident)],
            args=[now, window, limit.allowed, mode, member or uuid.uuid4().hex],
        )
    except REDIS_ERRORS as exc:
        logger.error("sign-in limits unavailable, %s not counted: %s", limit.name, exc)
        return 0.0
    if int(failures) < limit.allowed:
        return 0.0
    return max(float(oldest) + window - now, 1.0)


def blocked_for(limit: Limit, ident: str) -> float:
    """Seconds until `ident` may try again under `limit` (0: it may now)."""
    return _run(limit, ident, "check")


def record_failure(limit: Limit, ident: str) -> float:
    """Count a failure; seconds `ident` is blocked for now (0: not blocked)."""
    return _run(limit, ident, "add")


def reserve(limit: Limit, ident: str) -> tuple[float, str]:
    """Count an attempt as failed before it is made, unless `ident` is blocked:
    (seconds blocked, 0 when the attempt may go on; the reservation, for `release`
    should it succeed)."""
    member = uuid.uuid4().hex
    return _run(limit, ident, "reserve", member), member


def release(limit: Limit, ident: str, reservation: str) -> None:
    """Take back a reservation: the attempt succeeded."""
    try:
        get_redis().zrem(limit.key(ident), reservation)
    except REDIS_ERRORS as exc:
        logger.error("sign-in limits unavailable, %s not released: %s", limit.name, exc)


def clear(limit: Limit, ident: str) -> None:
    try:
        get_redis().delete(limit.key(ident))
    except REDIS_ERRORS as exc:
        logger.error("sign-in limits unavailable, %s not cleared: %s", limit.name, exc)


def note(step: str, outcome: str, *, address: str = "", username: str = "") -> None:
    """Count an attempt, and log it unless it succeeded. Never the password; and the
    name only as its digest's start, since people type passwords into it by mistake:
    enough to tell the lines of one name apart and match a name an operator asks about."""
    ATTEMPTS.labels(step, outcome).inc()
    if outcome == "success":
        return
    tag = hashlib.sha256(username_ident(username).encode()).hexdigest()[:12] if username else "-"
    logger.warning("sign-in %s refused (%s): name #%s from %s", step, outcome, tag, address or "-")
