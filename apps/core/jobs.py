"""Periodic jobs that stay correct when two beats fire them at once.

`periodic_job(name)` wraps a job so that each run first takes the job's session
advisory lock and claims the job's row in ScheduledJob: only one run may hold it at a
time (a second beat's duplicate, or an overlapping slow run, is skipped and says so).
The lock goes with the runner's database connection, so the claim of a run that died
(a SIGKILLed worker, a PostgreSQL crash that broke the connection before the claim
could be released) is taken over by the next run at once; a run still alive but
stuck past `stale_after` is taken over too. The row also records the last start,
last success, duration and error, for the dashboard and monitoring.
"""

from __future__ import annotations

import functools
import logging
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.locks import session_lock
from apps.core.models import ScheduledJob

logger = logging.getLogger(__name__)
SKIPPED = "skipped"


def claim_job(name: str, *, stale_after: timedelta, locked: bool = False):
    """The claim's start time when this run may go ahead, else None. `locked`: the
    caller holds the job's lock, so a claim still recorded is a dead run's."""
    now = timezone.now()
    with transaction.atomic():
        ScheduledJob.objects.get_or_create(name=name)
        rows = ScheduledJob.objects.filter(name=name)
        if not locked:
            rows = rows.filter(
                Q(running_since__isnull=True) | Q(running_since__lt=now - stale_after)
            )
        claimed = rows.update(running_since=now, last_started_at=now)
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


def record_run(name: str, call):
    """Run `call()` and record the run under `name` (ScopedTask does it for every
    `*.periodic_*` task, under the task's name): last start, last success, duration,
    error. Unlike a claim it excludes nothing; schedule monitoring (apps.core.schedules)
    reads these rows. A run skipped because another holds the job's claim is no success."""
    started, now = time.monotonic(), timezone.now()
    ScheduledJob.objects.update_or_create(name=name, defaults={"last_started_at": now})
    fields: dict = {}
    try:
        result = call()
    except Exception as exc:
        fields["last_error"] = f"{type(exc).__name__}: {exc}"[:500]
        raise
    else:
        if result != SKIPPED:
            fields.update(last_succeeded_at=timezone.now(), last_error="")
        return result
    finally:
        fields["last_duration_ms"] = int((time.monotonic() - started) * 1000)
        ScheduledJob.objects.filter(name=name).update(**fields)


def periodic_job(name: str, *, stale_after: timedelta = timedelta(minutes=15)):
    def decorate(body):
        @functools.wraps(body)
        def run(*args, **kwargs):
            with session_lock(f"steward.job:{name}", wait=False) as locked:
                claimed_at = claim_job(name, stale_after=stale_after, locked=locked)
                if claimed_at is None:
                    logger.info("periodic job %s is already running elsewhere; skipped", name)
                    return SKIPPED
                started = time.monotonic()
                try:
                    result = body(*args, **kwargs)
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    release_job(name, claimed_at=claimed_at, started=started, error=error)
                    raise
                release_job(name, claimed_at=claimed_at, started=started)
                return result

        return run

    return decorate
