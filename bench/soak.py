"""`soak`: the whole stack under steady traffic at about half its capacity, watched
minute by minute for what grows.

    python -m bench soak --minutes N [--capacity-seconds S]

The chaos drill's stack (bench/chaos.py: its own PostgreSQL and Redis, gunicorn, two
Celery workers, beat, `run_consumers` and the stand-ins) and its traffic in every
domain, without faults. Capacity is measured first: the drill's traffic unpaced for
`--capacity-seconds` (default 60), in rounds per second (a round is a fixed mix of API
calls: assets delegated for approval, batches submitted and reported, a binding,
ModelSync releases). The soak then paces rounds at half that rate for N minutes and
samples, each minute: every process's resident memory (its children included), the
outbox backlog, the Celery queues' and Steward's streams' lengths in Redis, and the
p99 latency of the API calls answered in that minute (a call's retries included).

Verdicts (`verdicts`): RSS of each process grows at most 10 % from the end of the
first minute to the end; the outbox backlog, the Celery queues and the streams'
unacknowledged entries stay bounded (the second half's highest at most twice the
first half's, or under a small floor); the last minute's p99 is at most 1.5 × the
first's. One JSON object on the last line; exit status 1 when a verdict fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from bench.chaos import DrillError, Traffic, _db, bring_up, drill_stack, say

RSS_GROWTH = 0.10
P99_GROWTH = 1.5
# Below this a backlog or a queue is noise (a batch in flight), whatever it did before.
BOUNDED_FLOOR = 500
CELERY_QUEUES = ("default", "periodic")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _bounded(series: list[int]) -> bool:
    half = len(series) // 2
    first, second = series[: max(1, half)], series[half:]
    return max(second) <= max(BOUNDED_FLOOR, 2 * max(first))


def verdicts(samples: list[dict]) -> dict:
    """The soak's verdicts from its per-minute samples (at least two)."""
    first, last = samples[0], samples[-1]
    growth = {
        name: round(last["rss_kib"][name] / kib - 1, 3)
        for name, kib in first["rss_kib"].items()
        if kib and name in last["rss_kib"]
    }
    queues = {
        "outbox_backlog": [s["outbox_backlog"] for s in samples],
        **{f"celery_{q}": [s["celery_queues"][q] for s in samples] for q in CELERY_QUEUES},
        "streams_unacknowledged": [s["streams"]["unacknowledged"] for s in samples],
    }
    p99_first, p99_last = first["p99_ms"], last["p99_ms"]
    result = {
        "rss_growth": growth,
        "rss_ok": all(g <= RSS_GROWTH for g in growth.values()),
        "bounded": {name: _bounded(series) for name, series in queues.items()},
        "p99_first_ms": p99_first,
        "p99_last_ms": p99_last,
        "p99_ok": p99_first is not None
        and p99_last is not None
        and p99_last <= P99_GROWTH * p99_first,
    }
    result["bounded_ok"] = all(result["bounded"].values())
    result["ok"] = result["rss_ok"] and result["bounded_ok"] and result["p99_ok"]
    return result


def _redis_lengths() -> tuple[dict, dict]:
    from apps.core.redis import get_redis
    from apps.eventing.transports import STREAM_PREFIX

    client = get_redis()
    celery = {queue: client.llen(queue) for queue in CELERY_QUEUES}
    entries = unacknowledged = 0
    for key in client.scan_iter(match=f"{STREAM_PREFIX}*", count=1000):
        entries += client.xlen(key)
        for group in client.xinfo_groups(key):
            unacknowledged += group["pending"] + (group.get("lag") or 0)
    return celery, {"entries": entries, "unacknowledged": unacknowledged}


def _backlog_exactly() -> int:
    from apps.core.scope import system_scope
    from apps.eventing.models import OutboxEvent

    with system_scope():
        return OutboxEvent.objects.count()


def sample(processes, api, since: float) -> dict:
    # Counted exactly: the verdict is whether the backlog stays bounded, which an
    # estimate past the console's counting bound (apps.core.counting) could not show.
    backlog = _db(_backlog_exactly)
    celery, streams = _redis_lengths()
    minute = [seconds for when, seconds in list(api.latencies) if when >= since]
    p99 = percentile(minute, 0.99)
    return {
        "rss_kib": processes.rss_kib(),
        "outbox_backlog": backlog,
        "celery_queues": celery,
        "streams": streams,
        "calls": len(minute),
        "p99_ms": round(p99 * 1000, 1) if p99 is not None else None,
    }


def run(*, minutes: int, capacity_seconds: float) -> dict:
    with drill_stack() as stack:
        api, secrets, expected = bring_up(stack, quick=False, web_workers=2)
        traffic = Traffic(api, secrets, expected, stack.workflow, quick=False)
        traffic.release_every = 20  # a schema that grows every round would slow by itself
        traffic.thread.start()
        # Capacity: as fast as one client's rounds go, after a short warm-up.
        time.sleep(10)
        rounds, calls, began = traffic.rounds, api.calls, time.monotonic()
        time.sleep(capacity_seconds)
        elapsed = time.monotonic() - began
        capacity = {
            "rounds_per_second": round((traffic.rounds - rounds) / elapsed, 3),
            "calls_per_second": round((api.calls - calls) / elapsed, 1),
            "seconds": round(elapsed, 1),
        }
        if capacity["rounds_per_second"] <= 0:
            raise DrillError("no round of traffic finished while measuring capacity")
        traffic.interval = 2 / capacity["rounds_per_second"]
        say(f"capacity {capacity}; soaking {minutes} min at half")
        samples = []
        for _ in range(minutes):
            since = time.monotonic()
            time.sleep(60)
            if traffic.error:
                raise traffic.error
            samples.append(sample(stack.processes, api, since))
            say(f"minute {len(samples)}: {json.dumps(samples[-1])}")
        traffic.stop.set()
        traffic.thread.join(timeout=120)
        result = verdicts(samples)
        return {
            "name": "soak",
            "minutes": minutes,
            "capacity": capacity,
            "rate_rounds_per_second": round(1 / traffic.interval, 3),
            "processes_exited": stack.processes.exited(),
            **result,
            "ok": result["ok"] and not stack.processes.exited(),
            "samples": samples,
        }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench soak")
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--capacity-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    if args.minutes < 2:
        parser.error("--minutes must be at least 2: the verdicts compare minutes")
    try:
        summary = run(minutes=args.minutes, capacity_seconds=args.capacity_seconds)
    except DrillError as exc:
        print(json.dumps({"name": "soak", "ok": False, "error": str(exc)}))
        return 2
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
