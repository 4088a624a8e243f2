"""The soak's verdicts: they pass a steady run and fail on memory that grows, a backlog
that climbs and a p99 that doubles (the soak itself is not in the suite)."""

import copy

from bench.soak import percentile, verdicts


def minute(rss=100_000, backlog=10, queue=0, unacknowledged=5, p99=40.0):
    return {
        "rss_kib": {"web": rss, "consumers": 80_000},
        "outbox_backlog": backlog,
        "celery_queues": {"default": queue, "periodic": 0},
        "streams": {"entries": 100, "unacknowledged": unacknowledged},
        "calls": 600,
        "p99_ms": p99,
    }


STEADY = [minute(rss=100_000 + 1000 * n, p99=40.0 + n) for n in range(10)]


def test_a_steady_run_passes():
    result = verdicts(STEADY)
    assert result["ok"], result
    assert result["rss_growth"]["web"] == 0.09


def test_memory_growing_past_ten_percent_fails():
    samples = copy.deepcopy(STEADY)
    samples[-1]["rss_kib"]["web"] = 111_000
    result = verdicts(samples)
    assert not result["ok"] and not result["rss_ok"]
    assert result["rss_growth"]["web"] == 0.11


def test_a_climbing_backlog_or_queue_fails():
    samples = [minute(backlog=100 * 4**n, queue=n) for n in range(6)]
    result = verdicts(samples)
    assert not result["bounded_ok"]
    assert result["bounded"] == {
        "outbox_backlog": False,
        "celery_default": True,  # a few tasks waiting: under the floor
        "celery_periodic": True,
        "streams_unacknowledged": True,
    }


def test_a_last_minute_p99_over_one_and_a_half_times_the_first_fails():
    samples = copy.deepcopy(STEADY)
    samples[-1]["p99_ms"] = 61.0
    result = verdicts(samples)
    assert not result["p99_ok"] and not result["ok"]


def test_percentile():
    assert percentile([], 0.99) is None
    assert percentile(list(range(1, 101)), 0.99) == 99
