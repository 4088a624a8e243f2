"""What every set-up installs for the stores (apps.core.setup): their periodic jobs."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import Schedule, install_periodic_tasks

SCHEDULES = [
    # Bindings whose provisioning or revocation was lost or failed go again.
    Schedule("stores.periodic_resume_bindings", 1, IntervalSchedule.MINUTES),
    # Exceptions and certifications end at their expiry.
    Schedule("stores.periodic_expire_exceptions_and_certifications", 1, IntervalSchedule.MINUTES),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)
