"""Periodic jobs: one record per run, and a claim for the jobs that must not overlap.

Every run of a beat task (`*.periodic_*`; ScopedTask calls `record_run`) is recorded
on one ScheduledJob row: last start, last success, duration and error, for the
dashboard and monitoring (apps.core.schedules).

`periodic_job(name)` wraps a job that must not run twice at once, so that each run
first takes the job's advisory lock (apps.core.locks, which works behind a pooler in
transaction mode) and claims the job's row: only one run may hold it at a time (a
second beat's duplicate, or an overlapping slow run, is skipped and says so). The lock
goes with the runner's database connection, so the claim of a run that died (a
SIGKILLed worker, a PostgreSQL crash that broke the connection before the claim could
be released) is taken over by the next run at once; a run still alive but stuck past
`stale_after` is taken over too.

The job's row is then the run's record: a beat task whose body runs a periodic job is
recorded on the job's row (named for the job, which a kicked task may share, and
marked with the beat task's name, which monitoring reads it by), never on a second
row under the task's own name.
"""

from __future__ import annotations

import functools
import logging
import time
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.locks import advisory_lock
from apps.core.models import ScheduledJob

logger = logging.getLogger(__name__)
SKIPPED = "skipped"


@dataclass
class _BeatRun:
    task: str
    recorded_by_job: bool = False


_beat_run: ContextVar[_BeatRun | None] = ContextVar("steward_beat_run", default=None)


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def claim_job(name: str, *, stale_after: timedelta, locked: bool = False, task: str = ""):
    """The claim's start time when this run may go ahead, else None. `locked`: the
    caller holds the job's lock, so a claim still recorded is a dead run's. `task`: the
    beat task this run is one of, recorded on the row for monitoring."""
    now = timezone.now()
    with transaction.atomic():
        ScheduledJob.objects.get_or_create(name=name)
        rows = ScheduledJob.objects.filter(name=name)
        if not locked:
            rows = rows.filter(
                Q(running_since__isnull=True) | Q(running_since__lt=now - stale_after)
            )
        marked = {"task": task} if task else {}
        claimed = rows.update(running_since=now, last_started_at=now, **marked)
    return now if claimed == 1 else None


def release_job(name: str, *, claimed_at, started: float, error: str = "") -> None:
    duration_ms = int((time.monotonic() - started) * 1000)
    fields = {"running_since": None, "last_duration_ms": duration_ms, "last_error": error[:500]}
    if not error:
        fields["last_succeeded_at"] = timezone.now()
    with transaction.atomic():
        # Only while the claim is still this run's: a run so slow that another took its
        # claim over must not release the newer run's claim.
        ScheduledJob.objects.filter(name=name, running_since=claimed_at).update(**fields)


def record_run(task: str, call):
    """Run `call()`, one run of the beat task `task`, and record it on the task's row:
    its start, success, duration and error. Unlike a claim it excludes nothing. A run
    whose body runs a periodic job is recorded by the job, on the job's row, and not
    here; a run skipped because another holds the job's claim is no success."""
    run = _BeatRun(task)
    token = _beat_run.set(run)
    started_at, started = timezone.now(), time.monotonic()
    fields: dict = {"last_started_at": started_at}
    try:
        result = call()
    except Exception as exc:
        fields["last_error"] = _error(exc)
        raise
    else:
        if result != SKIPPED:
            fields.update(last_succeeded_at=timezone.now(), last_error="")
        return result
    finally:
        _beat_run.reset(token)
        if not run.recorded_by_job:
            fields["last_duration_ms"] = int((time.monotonic() - started) * 1000)
            ScheduledJob.objects.update_or_create(name=task, defaults=fields)


def periodic_job(name: str, *, stale_after: timedelta = timedelta(minutes=15)):
    def decorate(body):
        @functools.wraps(body)
        def run(*args, **kwargs):
            beat_run = _beat_run.get()
            task = ""
            if beat_run is not None and not beat_run.recorded_by_job:
                beat_run.recorded_by_job, task = True, beat_run.task
            with advisory_lock(f"steward.job:{name}", wait=False) as locked:
                claimed_at = claim_job(name, stale_after=stale_after, locked=locked, task=task)
                if claimed_at is None:
                    logger.info("periodic job %s is already running elsewhere; skipped", name)
                    return SKIPPED
                started = time.monotonic()
                try:
                    result = body(*args, **kwargs)
                except Exception as exc:
                    release_job(name, claimed_at=claimed_at, started=started, error=_error(exc))
                    raise
                release_job(name, claimed_at=claimed_at, started=started)
                return result

        return run

    return decorate
