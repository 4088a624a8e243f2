"""What every set-up installs for the stores (apps.core.setup).

The default schedule of stores' own periodic job that core's list does not name:
exceptions and certifications ending at their expiry. Installed with get_or_create,
as core installs its schedules, so an operator's later change is kept. (The set-up
has no schedules step for apps; the reference-data step runs in the same
transaction, before core's schedules.)
"""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import install_interval_schedule

# (task, every, period, queue); the job claims its ScheduledJob row against double firing.
SCHEDULES = [
    (
        "stores.periodic_expire_exceptions_and_certifications",
        1,
        IntervalSchedule.MINUTES,
        "periodic",
    ),
]


def install_reference_data(report) -> None:
    for task, every, period, queue in SCHEDULES:
        install_interval_schedule(report, task, every, period, queue)
