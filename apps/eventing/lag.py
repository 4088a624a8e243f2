"""Each consumer group's lag on its topic's stream: now (`consumer_lag`), and sampled
each minute (`services.lag_sample_record`, the `eventing.periodic_sample_lag` task) for
the eventing page's lag over time.

The samples live beside what they measure, in Redis: a hash a minute of
"topic: consumer" -> events behind, expiring after LAG_HISTORY_SECONDS (the page's last
hour), and for each longer range the page offers (apps.console.charts.RANGES: 24 hours
in 30-minute columns, 7 days in 4-hour ones) a hash a column holding each group's worst
minute in it, kept as long as that range spans. The worst, not the mean: an operator
looks at a week for its peaks, and a mean spreads an hour's backlog thin. A Redis that
lost its data lost the lag with it; the chart then shows the gap.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from apps.console.charts import HOUR, RANGES
from apps.core.redis import REDIS_ERRORS, get_redis, script
from apps.eventing.transports import stream_key
from apps.registry.selectors import topic_names

LAG_COUNTED = 10_000
# Every key below matches LAG_HISTORY_KEY.format(minute="*").
LAG_HISTORY_KEY = "steward:eventing:lag:{minute}"
LAG_WORST_KEY = "steward:eventing:lag:{step}s:{start}"
LAG_HISTORY_SECONDS = 2 * 3600
# The ranges whose columns are wider than the minute: each keeps its worst-of-column hashes.
LAG_WORST_OF = tuple(r for r in RANGES if r.step != HOUR.step)


@dataclass(frozen=True)
class Lag:
    topic: str
    consumer: str
    waiting: int  # in the stream, not yet delivered to the group
    pending: int  # delivered, not acknowledged

    @property
    def behind(self) -> int:
        return self.waiting + self.pending


# Each stream's consumer groups (XINFO GROUPS; false for a topic with no stream yet) and
# every minute's sample (HGETALL), in one command: in a pipeline of an XINFO a topic and
# sixty HGETALLs, redis-py would pack each command and parse each answer in Python, a
# tenth of the eventing page's time. KEYS: the streams (ARGV[1] of them), then the
# minutes' sample keys.
_READ = """
local streams, groups, samples = tonumber(ARGV[1]), {}, {}
for i = 1, streams do
  local answer = redis.pcall('XINFO', 'GROUPS', KEYS[i])
  if type(answer) == 'table' and answer['err'] == nil then groups[i] = answer
  else groups[i] = false end
end
for i = streams + 1, #KEYS do samples[i - streams] = redis.call('HGETALL', KEYS[i]) end
return {groups, samples}
"""


# The minute's sample, and each longer range's column holding it raised to the sample
# where the sample is worse, in one script: the worst of a column is read back without
# reading its minutes. KEYS: the minute's hash, then the columns'; ARGV: each key's
# lifetime in seconds, in that order, then "topic: consumer", events behind, ...
_RECORD = """
local keys = #KEYS
redis.call('DEL', KEYS[1])
for i = keys + 1, #ARGV, 2 do
  local group, behind = ARGV[i], tonumber(ARGV[i + 1])
  redis.call('HSET', KEYS[1], group, ARGV[i + 1])
  for k = 2, keys do
    local worst = tonumber(redis.call('HGET', KEYS[k], group))
    if worst == nil or behind > worst then redis.call('HSET', KEYS[k], group, ARGV[i + 1]) end
  end
end
for k = 1, keys do redis.call('EXPIRE', KEYS[k], ARGV[k]) end
"""


def record_sample(minute, sample: dict[str, int]) -> None:
    """Keep `sample` ({"topic: consumer": events behind}) as `minute`'s, and as the worst
    so far of each longer range's column holding it; raises what Redis raises."""
    keys = [sample_key(minute)] + [
        sample_key(span.start_of(minute), span.step) for span in LAG_WORST_OF
    ]
    lifetimes = [LAG_HISTORY_SECONDS] + [
        # The range shows a column until `span` after the column's start, and every
        # write to it falls within its `step`: from any write, this outlives that.
        int((span.span + span.step).total_seconds())
        for span in LAG_WORST_OF
    ]
    pairs = [item for group, behind in sample.items() for item in (group, behind)]
    script(_RECORD)(keys=keys, args=lifetimes + pairs)


def consumer_lag(names=None) -> list[Lag]:
    """Each consumer group's lag on each topic's stream (every topic's, or those
    `names` when the caller has read them), now; empty when Redis does not answer (the
    chart then says so rather than the page failing)."""
    return lag_now_and_samples(topic_names() if names is None else names, [])[0]


def lag_samples(starts: list, step: timedelta = HOUR.step) -> dict[str, dict]:
    """{"topic: consumer": {start: events behind}}: as sampled at each minute of
    `starts`, or with a longer range's `step`, the worst sample of each of its columns
    (`starts`, as Range.buckets gives them); empty when Redis does not answer."""
    return lag_now_and_samples([], starts, step)[1]


def lag_now_and_samples(
    names, starts: list, step: timedelta = HOUR.step
) -> tuple[list[Lag], dict[str, dict]]:
    """`consumer_lag(names)` and `lag_samples(starts, step)` in one round trip."""
    names = sorted(names)
    if not names and not starts:
        return [], {}
    keys = [stream_key(name) for name in names] + [sample_key(s, step) for s in starts]
    try:
        answers, samples = script(_READ)(keys=keys, args=[len(names)])
    except REDIS_ERRORS:
        return [], {}
    found = [
        (topic, _pairs(group))
        for topic, groups in zip(names, answers, strict=True)
        if groups  # none: no stream yet
        for group in groups
    ]
    return _lags(found), _history(starts, samples)


def _pairs(flat: list) -> dict:
    # XINFO from a script answers each group as a flat list: field, value, ...
    return {_text(field): value for field, value in zip(flat[::2], flat[1::2], strict=True)}


def _lags(found: list[tuple[str, dict]]) -> list[Lag]:
    # Redis 7 counts a group's lag itself; before it, the entries after the group's last
    # delivered id are counted, up to LAG_COUNTED (one more pipelined round trip).
    unknown = [(topic, group) for topic, group in found if group.get("lag") is None]
    counted = {}
    if unknown:
        try:
            pipe = get_redis().pipeline(transaction=False)
            for topic, group in unknown:
                last = _text(group["last-delivered-id"])
                pipe.xrange(stream_key(topic), min=f"({last}", max="+", count=LAG_COUNTED)
            for (topic, group), entries in zip(unknown, pipe.execute(), strict=True):
                counted[(topic, _text(group["name"]))] = len(entries)
        except REDIS_ERRORS:
            pass
    lags = [
        Lag(
            topic=topic,
            consumer=_text(group["name"]),
            waiting=int(
                group["lag"]
                if group.get("lag") is not None
                else counted.get((topic, _text(group["name"])), 0)
            ),
            pending=int(group.get("pending") or 0),
        )
        for topic, group in found
    ]
    return sorted(lags, key=lambda lag: (-lag.behind, lag.consumer, lag.topic))


def _history(starts: list, samples: list) -> dict[str, dict]:
    history: dict[str, dict] = defaultdict(dict)
    for start, sample in zip(starts, samples, strict=True):
        # HGETALL from a script answers a flat list: field, value, field, value, ...
        for group, behind in zip(sample[::2], sample[1::2], strict=True):
            history[_text(group)][start] = int(behind)
    return history


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def sample_key(start, step: timedelta = HOUR.step) -> str:
    """The hash of the minute `start`, or of the column of `step` starting then."""
    if step == HOUR.step:
        return LAG_HISTORY_KEY.format(minute=int(start.timestamp()))
    return LAG_WORST_KEY.format(step=int(step.total_seconds()), start=int(start.timestamp()))
