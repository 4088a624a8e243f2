"""Retention rules, legal holds and sweeps: the reads, and the preview of tonight's sweep."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from apps.governance import retention_services, sweeper
from apps.governance.models import LegalHold, RetentionRule, RetentionSweep

SWEEP_TASK = "governance.periodic_retention_sweep"


def rule_list() -> QuerySet[RetentionRule]:
    return RetentionRule.objects.select_related("data_class", "store", "created_by")


def hold_list() -> QuerySet[LegalHold]:
    """The holds the current scope sees (a tenant's own; every tenant's in the system scope)."""
    return LegalHold.objects.select_related(
        "tenant", "data_class", "store", "created_by", "released_by"
    )


def sweep_list() -> QuerySet[RetentionSweep]:
    return RetentionSweep.objects.all()


def purge_outcomes(nights) -> dict[str, dict[str, int]]:
    """How the purge tasks each night issued stand now, by status ({night: {status:
    count}}), in one query: the owners' receipts settle them as completed."""
    from django.db.models import Count

    from apps.governance.models import GovernanceTask

    wanted = [night.isoformat() for night in nights]
    rows = (
        GovernanceTask.objects.filter(kind=GovernanceTask.Kind.PURGE, detail__night__in=wanted)
        .values_list("detail__night", "status")
        .annotate(count=Count("id"))
        .order_by()
    )
    outcomes: dict[str, dict[str, int]] = {night: {} for night in wanted}
    for night, status, count in rows:
        outcomes.setdefault(night, {})[status] = count
    return outcomes


def sweep_schedule() -> dict:
    """The crontab line the nightly sweep runs on (the installed schedule, which an
    operator may have changed, else the setting) and whether it is enabled."""
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.select_related("crontab").filter(name=SWEEP_TASK).first()
    if task is not None and task.crontab is not None:
        c = task.crontab
        line = f"{c.minute} {c.hour} {c.day_of_month} {c.month_of_year} {c.day_of_week}"
        return {"crontab": line, "enabled": task.enabled, "installed": True}
    return {
        "crontab": settings.STEWARD_RETENTION_SWEEP_CRONTAB,
        "enabled": True,
        "installed": False,
    }


def next_sweep_at(now: datetime | None = None, line: str | None = None) -> datetime:
    from celery.schedules import crontab

    now = now or timezone.now()
    minute, hour, day_of_month, month_of_year, day_of_week = (
        line or sweep_schedule()["crontab"]
    ).split()
    cron = crontab(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        nowfun=lambda: now,
    )
    return now + cron.remaining_estimate(now)


def sweep_preview(*, now: datetime | None = None) -> dict:
    """What the next nightly sweep would do, with the rules and holds as they are now:
    the purge tasks it would issue, the targets a hold keeps, and the rows of Steward's
    own tables that would be expired by then. Changes nothing."""
    now = now or timezone.now()
    schedule = sweep_schedule()
    as_of = next_sweep_at(now, schedule["crontab"])
    plan = retention_services.plan_at(as_of)
    holds = retention_services._holds()
    own = sweeper.expired_counts(
        as_of=as_of, held_tenants=retention_services.tenant_wide_holds(holds)
    )
    return {
        "as_of": as_of,
        "schedule": schedule,
        "purges": [
            {
                "tenant": p.target.label("tenant"),
                "store": p.target.label("store"),
                "data_class": p.target.label("data_class"),
                "owner": p.target.label("owner"),
                "rule": p.rule.name,
                "period_days": p.rule.period_days,
                "action": p.action,
                "cutoff": p.cutoff,
                "due_at": p.due_at,
            }
            for p in plan.purges
        ],
        "held": [
            {
                "tenant": h.target.label("tenant"),
                "store": h.target.label("store"),
                "rule": h.rule.name,
                "holds": [{"id": str(x.id), "reason": x.reason} for x in h.holds],
            }
            for h in plan.held
        ],
        "uncovered": [
            {"tenant": t.label("tenant"), "store": t.label("store")} for t in plan.uncovered
        ],
        "own_tables": own,
        "traces": retention_services.traces_note(),
    }
