"""What every set-up installs for assets (apps.core.setup): its periodic jobs."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import Schedule, install_periodic_tasks

SCHEDULES = [
    # Kicked when a callback is recorded; this sweep only catches lost kicks.
    Schedule("assets.periodic_apply_workflow_callbacks", 5, IntervalSchedule.SECONDS),
    # Delegations whose task died with a worker, or never reached the broker, go again.
    Schedule("assets.periodic_resume_delegations", 1, IntervalSchedule.MINUTES),
    # On by default: it only reads the Workflow Service, and recovers a lost callback
    # before the asset waits on a person (attention kind overdue-decision). An existing
    # installation keeps the operator's choice (install_periodic_tasks creates once).
    Schedule("assets.periodic_reconcile_workflows", 15, IntervalSchedule.MINUTES),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)
