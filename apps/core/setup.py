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
3. the default schedules: core's own, below (periodic tasks are named, not imported);
4. `install.install_consumers(report)`: Steward's consumers' subscriptions (eventing);
5. with `--demo`, once: `demo.install_demo_data(report)`, each app's demo rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from celery.schedules import crontab
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.core.hooks import app_modules

SETUP_LOCK = 7_246_001  # arbitrary, fixed: the advisory lock key of the set-up

# (task, every, period, queue); each periodic task guards itself against double firing.
SCHEDULES = [
    # The dispatcher is kicked on commit; this sweep only catches lost kicks and lanes
    # whose back-off has passed, so a few seconds is plenty.
    ("eventing.periodic_sweep_outbox", 5, IntervalSchedule.SECONDS, "periodic"),
    ("eventing.periodic_reconcile_effects", 30, IntervalSchedule.SECONDS, "periodic"),
    ("eventing.periodic_trim_streams", 1, IntervalSchedule.MINUTES, "periodic"),
    ("eventing.periodic_sample_lag", 1, IntervalSchedule.MINUTES, "periodic"),
    ("eventing.periodic_redeliver_replays", 30, IntervalSchedule.SECONDS, "periodic"),
    # Kicked when a batch turns terminal; this sweep only catches lost kicks.
    ("compute.periodic_poll_batch_links", 5, IntervalSchedule.SECONDS, "periodic"),
    ("compute.periodic_resolve_orphan_links", 1, IntervalSchedule.HOURS, "periodic"),
    # Bindings whose provisioning or revocation was lost or failed go again.
    ("stores.periodic_resume_bindings", 1, IntervalSchedule.MINUTES, "periodic"),
    # Kicked when a callback is recorded; this sweep only catches lost kicks.
    ("assets.periodic_apply_workflow_callbacks", 5, IntervalSchedule.SECONDS, "periodic"),
    # Delegations whose task died with a worker, or never reached the broker, go again.
    ("assets.periodic_resume_delegations", 1, IntervalSchedule.MINUTES, "periodic"),
    # Starts deletions whose cooling-off has passed and flags overdue governance tasks.
    ("governance.periodic_advance_orders", 1, IntervalSchedule.MINUTES, "periodic"),
]
# Installed disabled: an operator turns them on (console or admin) when wanted.
OPT_IN_SCHEDULES = [
    ("assets.periodic_reconcile_workflows", 15, IntervalSchedule.MINUTES, "periodic"),
]
# (task, the setting holding its crontab line, queue): jobs that run at a time of day.
CRONTAB_SCHEDULES = [
    ("governance.periodic_retention_sweep", "STEWARD_RETENTION_SWEEP_CRONTAB", "periodic"),
]
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
    schedules = [(*s, True) for s in SCHEDULES] + [(*s, False) for s in OPT_IN_SCHEDULES]
    for task, every, period, queue, enabled in schedules:
        install_interval_schedule(report, task, every, period, queue, enabled)
    for task, setting, queue in CRONTAB_SCHEDULES:
        minute, hour, day_of_month, month_of_year, day_of_week = crontab_fields(
            getattr(settings, setting), setting
        )
        schedule, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
            timezone="UTC",
        )
        _install(report, task, queue, True, f" ({getattr(settings, setting)})", crontab=schedule)


def install_interval_schedule(
    report, task: str, every: int, period: str, queue: str = "periodic", enabled: bool = True
) -> None:
    """One periodic task on an interval, for an app's own `install.py` (its schedules
    are its own, not this list's); created once, so an operator's change is kept."""
    interval, _ = IntervalSchedule.objects.get_or_create(every=every, period=period)
    _install(report, task, queue, enabled, interval=interval)


def _install(report, task: str, queue: str, enabled: bool, note: str = "", **when) -> None:
    # Created once: an operator's later change in the console or admin is kept.
    _, created = PeriodicTask.objects.get_or_create(
        name=task,
        defaults={"task": task, "queue": queue, "kwargs": json.dumps({}), "enabled": enabled}
        | when,
    )
    if created:
        report.created.append(f"schedule {task}{note}")


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
