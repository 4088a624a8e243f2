"""Periodic jobs that stay correct when two beats fire them at once.

`periodic_job(name)` wraps a job so that each run first claims the job's row in
ScheduledJob with a conditional UPDATE: only one run may hold it at a time (a second
beat's duplicate, or an overlapping slow run, is skipped and says so), and a run
that died is taken over after `stale_after`. The row also records the last start,
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

from apps.core.models import ScheduledJob

logger = logging.getLogger(__name__)
SKIPPED = "skipped"


def claim_job(name: str, *, stale_after: timedelta) -> bool:
    now = timezone.now()
    with transaction.atomic():
        ScheduledJob.objects.get_or_create(name=name)
        claimed = (
            ScheduledJob.objects.filter(name=name)
            .filter(Q(running_since__isnull=True) | Q(running_since__lt=now - stale_after))
            .update(running_since=now, last_started_at=now)
        )
    return claimed == 1


def release_job(name: str, *, started: float, error: str = "") -> None:
    duration_ms = int((time.monotonic() - started) * 1000)
    fields = {"running_since": None, "last_duration_ms": duration_ms, "last_error": error[:500]}
    if not error:
        fields["last_succeeded_at"] = timezone.now()
    with transaction.atomic():
        ScheduledJob.objects.filter(name=name).update(**fields)


def periodic_job(name: str, *, stale_after: timedelta = timedelta(minutes=15)):
    def decorate(body):
        @functools.wraps(body)
        def run(*args, **kwargs):
            if not claim_job(name, stale_after=stale_after):
                logger.info("periodic job %s is already running elsewhere; skipped", name)
                return SKIPPED
            started = time.monotonic()
            try:
                result = body(*args, **kwargs)
            except Exception as exc:
                release_job(name, started=started, error=f"{type(exc).__name__}: {exc}")
                raise
            release_job(name, started=started)
            return result

        return run

    return decorate
