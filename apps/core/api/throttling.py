import logging
import time
import uuid

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from apps.core.addresses import client_address
from apps.core.redis import REDIS_ERRORS, script

logger = logging.getLogger(__name__)

# DRF's sliding window, kept in Redis as a sorted set of request times and decided by
# Redis itself: one round trip per request. DRF's own throttle reads the caller's
# whole history from the cache and writes it back (two round trips, and a pickled
# list as long as the rate: at a high rate that list was most of a request's cost),
# and two processes reading the same history at once could both let a request past.
# A refused request is not recorded, as in DRF; the answer's second value is when the
# oldest request in the window leaves it.
_SLIDING_WINDOW = """
local key, now, window, limit = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, oldest[2]}
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window * 1000))
return {1, '0'}
"""


class CallerRateThrottle(SimpleRateThrottle):
    """Rate per caller: a service account, a person, or (anonymous) an address."""

    scope = "caller"

    def get_rate(self):
        rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        return rates["caller"]

    def get_cache_key(self, request, view):
        if getattr(request, "service_account", None) is not None:
            ident = f"service:{request.service_account.pk}"
        elif request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"anon:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def get_ident(self, request):
        # DRF's own takes the whole X-Forwarded-For of any client unless NUM_PROXIES is
        # set, so varying the header lifted the anonymous limit.
        return client_address(request)

    def allow_request(self, request, view):
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        self.now = time.time()
        # Under the cache's prefix, so each test run counts apart (tests/conftest.py).
        prefix = settings.CACHES["default"].get("KEY_PREFIX", "")
        try:
            allowed, oldest = script(_SLIDING_WINDOW)(
                keys=[f"{prefix}:{key}"],
                args=[
                    self.now,
                    self.duration,
                    self.num_requests,
                    f"{self.now}:{uuid.uuid4().hex[:8]}",
                ],
            )
        except REDIS_ERRORS as exc:
            # Open, not shut: while Redis fails over (or is down) the request is let
            # through uncounted rather than answered 500; what it writes waits in
            # PostgreSQL's outbox, which needs no Redis (bench cluster found the 500s).
            logger.warning("rate limit not checked, Redis unavailable: %s", exc)
            return True
        self._oldest = float(oldest)
        return bool(allowed)

    def wait(self):
        return max(self.duration - (self.now - self._oldest), 0.001)
