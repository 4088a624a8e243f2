"""What every set-up installs for governance (apps.core.setup): Steward's own data
classes, each with the retention rule its setting gives, and governance's periodic
jobs: the minute's round of orders, the nightly retention sweep and the hourly sweep
of Steward's own tables.

A class's default rule is installed with the class, once: an operator's later change
to the rule, or its deletion (the class's rows are then kept), survives every set-up.
"""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.scope import system_scope
from apps.core.setup import Schedule, install_periodic_tasks
from apps.governance.models import RetentionRule
from apps.governance.retention.sweeper import OWN_CLASSES
from apps.tenancy.models import DataClass

OWN_TABLES_SWEEP = "governance.periodic_sweep_own_tables"
SCHEDULES = [
    # Starts deletions whose cooling-off has passed and flags overdue governance tasks.
    Schedule("governance.periodic_advance_orders", 1, IntervalSchedule.MINUTES),
    Schedule("governance.periodic_retention_sweep", crontab="STEWARD_RETENTION_SWEEP_CRONTAB"),
    Schedule(OWN_TABLES_SWEEP, 1, IntervalSchedule.HOURS),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)


def install_reference_data(report) -> None:
    with system_scope():
        for own in OWN_CLASSES:
            data_class, created = DataClass.objects.get_or_create(
                slug=own.slug,
                defaults={
                    "name": own.name,
                    "sensitivity": own.sensitivity,
                    "description": "Steward's own data: the retention rules naming this "
                    "class decide how long Steward keeps it.",
                },
            )
            if not created:
                continue
            report.created.append(f"data class {own.slug}")
            if own.default_days is None:
                continue
            RetentionRule.objects.get_or_create(
                name=own.default_rule,
                defaults={
                    "data_class": data_class,
                    "period_days": own.default_days(),
                    "action": own.actions[0],
                },
            )
            report.created.append(f"retention rule {own.default_rule} (from {own.setting})")
