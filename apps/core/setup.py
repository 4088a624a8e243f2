"""Reference data, default schedules and demo data, installed idempotently.

Everything runs in one transaction behind a PostgreSQL advisory lock, so two
processes running the set-up at the same moment (two containers starting, say)
take turns, and the second finds everything in place and creates nothing.

Core is the bottom layer and imports no other app: each app contributes its part
through modules of its own (apps.core.hooks), `install.py` for what every set-up
installs and `demo.py` for the demo data `--demo` loads once. The steps, in order,
each over the apps in INSTALLED_APPS order:

1. `install.install_topics(report)`: the topics events are emitted on (registry),
   before anything that emits;
2. `install.install_reference_data(report)`: catalog rows (tenancy's regions and
   data classes);
3. `install.install_schedules(report)`: each app's periodic tasks (named, not
   imported), their default schedules installed with `install_periodic_tasks`; core
   has none;
4. `install.install_consumers(report)`: Steward's consumers' subscriptions (eventing);
5. with `--demo`, once: `demo.install_demo_data(report)`, each app's demo rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

from celery.schedules import crontab
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.core.hooks import app_modules

SETUP_LOCK = 7_246_001  # arbitrary, fixed: the advisory lock key of the set-up


class Schedule(NamedTuple):
    """A periodic task's default schedule, declared in its app's `install.py`: every
    `every` `period`s, or at the times of the crontab line in the setting `crontab`
    names. A task that must not run twice at once claims its job
    itself (apps.core.jobs), so a second beat does no harm."""

    task: str
    every: int | None = None
    period: str | None = None
    queue: str = "periodic"
    # False: installed switched off, for an operator to turn on (console or admin).
    enabled: bool = True
    crontab: str | None = None


# The demo data is loaded once: its operator's account marks it as loaded.
DEMO_OPERATOR = "operator"


@dataclass
class SetupReport:
    created: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


def run_step(step: str, report: SetupReport) -> None:
    """Every app's `install.<step>(report)`, in INSTALLED_APPS order."""
    for module in app_modules("install"):
        contribution = getattr(module, step, None)
        if contribution is not None:
            contribution(report)


def install_schedules(report: SetupReport) -> None:
    """Every app's default schedules (the set-up's third step)."""
    run_step("install_schedules", report)


def install_periodic_tasks(report, schedules: list[Schedule]) -> None:
    """An app's periodic tasks with their default schedules, each created once: an
    operator's later change in the console or admin is kept."""
    for schedule in schedules:
        note, when = "", {}
        if schedule.crontab:
            line = getattr(settings, schedule.crontab)
            note, when["crontab"] = f" ({line})", _crontab(line, schedule.crontab)
        else:
            when["interval"], _ = IntervalSchedule.objects.get_or_create(
                every=schedule.every, period=schedule.period
            )
        _, created = PeriodicTask.objects.get_or_create(
            name=schedule.task,
            defaults={
                "task": schedule.task,
                "queue": schedule.queue,
                "kwargs": json.dumps({}),
                "enabled": schedule.enabled,
            }
            | when,
        )
        if created:
            report.created.append(f"schedule {schedule.task}{note}")


def _crontab(line: str, setting: str) -> CrontabSchedule:
    minute, hour, day_of_month, month_of_year, day_of_week = crontab_fields(line, setting)
    schedule, _ = CrontabSchedule.objects.get_or_create(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        timezone="UTC",
    )
    return schedule


def crontab_fields(line: str, setting: str) -> list[str]:
    """The five fields of a crontab line; a malformed line stops the set-up, naming it."""
    fields = (line or "").split()
    problem = "" if len(fields) == 5 else "it has not five fields"
    if not problem:
        try:
            minute, hour, day_of_month, month_of_year, day_of_week = fields
            crontab(
                minute=minute,
                hour=hour,
                day_of_month=day_of_month,
                month_of_year=month_of_year,
                day_of_week=day_of_week,
            )
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise ImproperlyConfigured(
            f"{setting} must be a crontab line (minute hour day-of-month month "
            f"day-of-week), and {line!r} is not: {problem}."
        )
    return fields


def install_demo_data(report: SetupReport) -> None:
    if get_user_model().objects.filter(username=DEMO_OPERATOR).exists():
        return  # demo data is loaded once; later runs keep what operators changed
    phrases = []
    for module in app_modules("demo"):
        phrases += module.install_demo_data(report)
    report.created.append(f"demo data ({listing(phrases)})")


def listing(phrases: list[str]) -> str:
    """The phrases joined by commas; one that lists things itself ends with a semicolon."""
    text = ""
    for before, phrase in zip(["", *phrases], phrases, strict=False):
        if text:
            text += "; " if ", " in before else ", "
        text += phrase
    return text


def run_setup(*, demo: bool) -> SetupReport:
    report = SetupReport()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SETUP_LOCK])
        run_step("install_topics", report)
        run_step("install_reference_data", report)
        install_schedules(report)
        run_step("install_consumers", report)
        if demo:
            install_demo_data(report)
    return report
