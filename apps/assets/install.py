"""What every set-up installs for assets (apps.core.setup): its periodic jobs."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import Schedule, install_periodic_tasks

SCHEDULES = [
    # Kicked when a callback is recorded; this sweep only catches lost kicks.
    Schedule("assets.periodic_apply_workflow_callbacks", 5, IntervalSchedule.SECONDS),
    # Delegations whose task died with a worker, or never reached the broker, go again.
    Schedule("assets.periodic_resume_delegations", 1, IntervalSchedule.MINUTES),
    # Switched off until an operator turns it on.
    Schedule("assets.periodic_reconcile_workflows", 15, IntervalSchedule.MINUTES, enabled=False),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)
