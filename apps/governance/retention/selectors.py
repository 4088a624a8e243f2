"""Retention rules, legal holds and sweeps: the reads, what a sweep plans from the rules
and holds in force, and the preview of tonight's sweep."""

from __future__ import annotations

from datetime import datetime, timedelta

from celery.schedules import crontab
from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.core.models import ScheduledJob
from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import GovernanceTask, LegalHold, RetentionRule, RetentionSweep
from apps.governance.retention import policy, sweeper
from apps.stores.models import LIVE_STATUSES, StoreBinding
from apps.stores.selectors import bindings_holding_tenant_data, live_binding_list
from apps.tenancy.models import DataClass, Tenant

SWEEP_TASK = "governance.periodic_retention_sweep"
# The claimed job the sweep task runs (apps.core.jobs): its row says whether a sweep runs.
SWEEP_JOB = "governance.retention_sweep"


def rule_list() -> QuerySet[RetentionRule]:
    return RetentionRule.objects.select_related("data_class", "store", "created_by")


def hold_list() -> QuerySet[LegalHold]:
    """The holds the current scope sees (a tenant's own; every tenant's in the system scope)."""
    return LegalHold.objects.select_related(
        "tenant", "data_class", "store", "created_by", "released_by"
    )


def sweep_list() -> QuerySet[RetentionSweep]:
    return RetentionSweep.objects.all()


def active_legal_holds(tenant_id) -> QuerySet[LegalHold]:
    """The tenant's legal holds not yet released."""
    return LegalHold.objects.filter(tenant_id=tenant_id, released_at__isnull=True)


# --------------------------------------------------------------------------- the plan


def purge_targets() -> list[policy.Target]:
    """Every tenant's live store bindings, as the policy sees them."""
    with system_scope():
        bindings = live_binding_list().order_by("tenant__slug", "store__slug")
        return [_target(b) for b in bindings]


def _target(binding, *extra_labels) -> policy.Target:
    return policy.Target(
        tenant_id=binding.tenant_id,
        store_id=binding.store_id,
        data_class_id=binding.store.data_class_id,
        owning_service_id=binding.store.owning_service_id,
        binding_id=binding.pk,
        labels=(
            ("tenant", binding.tenant.slug),
            ("store", binding.store.slug),
            ("data_class", binding.store.data_class.slug),
            ("owner", binding.store.owning_service.name),
            *extra_labels,
        ),
    )


def retired_purge_targets() -> list[policy.Target]:
    """Every binding no longer live whose data its owner has not yet said is gone
    (stores' `bindings_holding_tenant_data`, less the live ones), as the policy sees
    them: each is owed a purge owner task."""
    with system_scope():
        tenants = (
            StoreBinding.objects.exclude(status__in=LIVE_STATUSES)
            .filter(data_purged_at__isnull=True)
            .values_list("tenant_id", flat=True)
            .distinct()
            .order_by()
        )
        bindings = [
            b
            for tenant_id in sorted(tenants, key=str)
            for b in bindings_holding_tenant_data(tenant_id)
            .exclude(status__in=LIVE_STATUSES)
            .filter(data_purged_at__isnull=True)
        ]
        return [_target(b, ("binding_status", b.status)) for b in bindings]


def retired_purge_key(target: policy.Target) -> str:
    """One purge task per retired binding: what keeps a second round from issuing it
    again (an open one is awaited, a failed one an operator retries, a completed one's
    receipt has recorded the data gone)."""
    return f"retired:{target.tenant_id}:{target.binding_id}"


def retired_purge_task(target: policy.Target) -> GovernanceTask | None:
    """The owner task that asks for a retired binding's data to go: its purge task, or a
    deletion order's open task for the binding (which asks the same). The caller's
    tenant scope."""
    return retired_purge_tasks([target]).get(str(target.binding_id))


def retired_purge_tasks(targets: list[policy.Target]) -> dict[str, GovernanceTask]:
    """`retired_purge_task` for many bindings in two statements, whatever their
    number: {binding id: its task}, bindings without one left out."""
    keys = {retired_purge_key(t): str(t.binding_id) for t in targets}
    found: dict[str, GovernanceTask] = {}
    if not keys:
        return found
    purges = GovernanceTask.objects.filter(
        kind=GovernanceTask.Kind.PURGE, detail__key__in=list(keys)
    ).order_by("pk")
    for task in purges:
        found.setdefault(keys[task.detail["key"]], task)
    missing = [binding for binding in keys.values() if binding not in found]
    if missing:
        open_tasks = GovernanceTask.objects.filter(
            status__in=GovernanceTask.OPEN, detail__binding__in=missing
        ).order_by("pk")
        for task in open_tasks:
            found.setdefault(task.detail["binding"], task)
    return found


def retired_purges_preview(holds: list[policy.HoldView]) -> list[dict]:
    """Every retired binding whose data is not yet recorded gone, with the rule that
    says what its owner is asked, the hold that pauses it, and its task as it stands
    (none yet: the next minute's round issues it)."""
    rules = enabled_rule_views()
    targets = retired_purge_targets()
    with system_scope():
        tasks = retired_purge_tasks(targets)
    rows = []
    for target in targets:
        rule = policy.effective_rule(rules, target)
        holding = [hold for hold in holds if policy.hold_covers(hold, target)]
        task = tasks.get(str(target.binding_id))
        rows.append(
            {
                "tenant": target.label("tenant"),
                "store": target.label("store"),
                "owner": target.label("owner"),
                "binding": str(target.binding_id),
                "binding_status": target.label("binding_status"),
                "rule": rule.name if rule else None,
                "action": rule.action if rule else "delete",
                "holds": [{"id": str(h.id), "reason": h.reason} for h in holding],
                "task": str(task.pk) if task else None,
                "task_status": _retired_task_status(task, held=bool(holding)),
            }
        )
    return rows


def _retired_task_status(task: GovernanceTask | None, *, held: bool) -> str:
    if task is None:
        return "held" if held else "to issue"
    return "held" if task.held_at else task.status


def purge_task_target(task: GovernanceTask) -> policy.Target:
    """The data a purge task is about, as the policy sees it (to ask which holds cover it)."""
    return policy.Target(
        tenant_id=task.tenant_id,
        store_id=task.store_id,
        data_class_id=task.store.data_class_id if task.store_id else None,
    )


def purges_paused_by(hold: LegalHold) -> list[GovernanceTask]:
    """The open purge tasks the hold covers that are paused (by it, or by it and others)."""
    view = policy.HoldView.of(hold)
    with tenant_scope(hold.tenant_id):
        paused = GovernanceTask.objects.select_related("store").filter(
            tenant_id=hold.tenant_id,
            kind=GovernanceTask.Kind.PURGE,
            status__in=GovernanceTask.OPEN,
            held_at__isnull=False,
        )
        return [task for task in paused if policy.hold_covers(view, purge_task_target(task))]


def enabled_rule_views() -> list[policy.RuleView]:
    return [policy.RuleView.of(r) for r in RetentionRule.objects.filter(enabled=True)]


def active_hold_views() -> list[policy.HoldView]:
    """Every tenant's active legal holds, as the policy sees them."""
    with system_scope():
        return [policy.HoldView.of(h) for h in LegalHold.objects.filter(released_at__isnull=True)]


def purge_task_due_after() -> timedelta:
    return timedelta(hours=settings.STEWARD_RETENTION_TASK_DUE_HOURS)


def plan_at(as_of: datetime, *, holds: list[policy.HoldView] | None = None) -> policy.Plan:
    """What a sweep at `as_of` would issue and hold, from the rules and holds now
    (`holds`, when the caller has read them already)."""
    return policy.plan_retention(
        rules=enabled_rule_views(),
        holds=active_hold_views() if holds is None else holds,
        targets=purge_targets(),
        as_of=as_of,
        due_after=purge_task_due_after(),
    )


def own_data_classes() -> dict[str, int]:
    """Steward's own data classes as installed (slug → id); one not installed yet has no
    rule, so its tables are kept."""
    return dict(DataClass.objects.filter(slug__in=sweeper.OWN_CLASS).values_list("slug", "id"))


def own_decisions(
    as_of: datetime,
    *,
    rules: list[policy.RuleView] | None = None,
    holds: list[policy.HoldView] | None = None,
) -> dict[str, policy.OwnDecision]:
    """What decides each of Steward's own data classes at `as_of` (slug → decision),
    from the enabled rules and active holds (`rules`/`holds` when read already)."""
    rules = enabled_rule_views() if rules is None else rules
    holds = active_hold_views() if holds is None else holds
    ids = own_data_classes()
    return {
        slug: policy.own_table_decision(
            rules=rules, holds=holds, data_class_id=ids.get(slug), as_of=as_of
        )
        for slug in sweeper.OWN_CLASS
    }


def inbox_window() -> timedelta | None:
    """The inbox's deduplication window in force: the period of the effective rule of
    steward-event-receipts (services refuse one below sweeper.INBOX_MINIMUM_DAYS); None
    when no enabled rule names it, and the inbox keeps every row. apps.eventing.redrive
    reads it through the port STEWARD_INBOX_WINDOW_SOURCE names, so the re-drive window
    and the dedup window are one number. Holds only keep rows longer: not read."""
    decision = own_decisions(timezone.now(), holds=[])["steward-event-receipts"]
    return timedelta(days=decision.rule.period_days) if decision.rule else None


def own_tables_preview(as_of: datetime, holds: list[policy.HoldView]) -> list[dict]:
    """Each of Steward's own tables with the rule that decides it, what the rule does and
    how many rows it would take at `as_of`, and the tenants a hold keeps."""
    decisions = own_decisions(as_of, holds=holds)
    tenants = _tenant_slugs({t for d in decisions.values() for t in d.held_tenants})
    rows = []
    for table in sweeper.OWN_TABLES:
        decision = decisions[table.data_class]
        rule = decision.rule
        rows.append(
            {
                "table": table.label,
                "data_class": table.data_class,
                "rule": rule.name if rule else None,
                "period_days": rule.period_days if rule else None,
                "action": rule.action if rule else None,
                "cutoff": decision.cutoff,
                "rows": sweeper.expired_counts(table, decision),
                "held_tenants": sorted(tenants[t] for t in decision.held_tenants)
                if table.tenant_owned
                else [],
                "decided_by": (
                    f"rule {rule.name}" if rule else "no enabled rule names its data class: kept"
                ),
            }
        )
    return rows


def _tenant_slugs(ids: set[str]) -> dict[str, str]:
    with system_scope():
        found = dict(Tenant.objects.filter(pk__in=ids).values_list("pk", "slug"))
    return {str(pk): slug for pk, slug in found.items()}


def traces_note() -> str:
    return (
        f"Traces expire in their own backend after {settings.STEWARD_TRACE_RETENTION_DAYS} "
        "days; Steward issues nothing for them (informational)."
    )


# --------------------------------------------------------------------------- the sweeps


def purge_outcomes(nights) -> dict[str, dict[str, int]]:
    """How the purge tasks each night issued stand now, by status ({night: {status:
    count}}), in one query: the owners' receipts settle them as completed."""
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


def sweep_running_since() -> datetime | None:
    """When the sweep running now started, if one runs."""
    return (
        ScheduledJob.objects.filter(name=SWEEP_JOB).values_list("running_since", flat=True).first()
    )


def sweep_run_state(asked: datetime) -> str:
    """Where a sweep asked for at `asked` stands: "queued" until a worker starts a run
    after it, "running" while one runs, then "done" (the sweeps' table says how it went)."""
    job = ScheduledJob.objects.filter(name=SWEEP_JOB).first()
    if job is not None and job.running_since is not None:
        return "running"
    if job is None or job.last_started_at is None or job.last_started_at < asked:
        return "queued"
    return "done"


def next_sweep_at(now: datetime | None = None, line: str | None = None) -> datetime:
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
    the purge tasks it would issue, the targets a hold keeps, the retired bindings still
    owed a purge, and Steward's own tables with the rule deciding each and the rows it
    would take by then. Changes nothing."""
    now = now or timezone.now()
    schedule = sweep_schedule()
    as_of = next_sweep_at(now, schedule["crontab"])
    holds = active_hold_views()
    plan = plan_at(as_of, holds=holds)
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
        "retired": retired_purges_preview(holds),
        "own_tables": own_tables_preview(as_of, holds),
        "traces": traces_note(),
    }
