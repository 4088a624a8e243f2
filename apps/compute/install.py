"""What every set-up installs for compute (apps.core.setup): its periodic jobs."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import Schedule, install_periodic_tasks

SCHEDULES = [
    # Kicked when a batch turns terminal; this sweep only catches lost kicks.
    Schedule("compute.periodic_poll_batch_links", 5, IntervalSchedule.SECONDS),
    Schedule("compute.periodic_resolve_orphan_links", 1, IntervalSchedule.HOURS),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)
