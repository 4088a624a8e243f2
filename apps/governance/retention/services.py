"""Retention rules, legal holds and the nightly sweep: the writes.

Rules are platform-wide and operators' to change; a locked rule refuses anything but a
longer period (apps.governance.retention.policy.check_locked, and a trigger in the
database). Holds are a tenant's, placed and released by its admins or an operator,
always with a reason. The sweep plans purges from the rules and holds in force
(apps.governance.retention.selectors.plan_at), issues one purge owner task per planned
purge to the store's owning service, sweeps Steward's own tables
(apps.governance.retention.sweeper) and records the night in RetentionSweep. Everything
a person changes is audited.
"""

from __future__ import annotations

import logging
from datetime import date, datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, NotFound, ValidationFailed
from apps.core.locks import advisory_lock
from apps.core.scope import system_scope, tenant_scope
from apps.governance.codes import GovernanceCode
from apps.governance.models import GovernanceTask, LegalHold, RetentionRule, RetentionSweep
from apps.governance.orders.services import (
    advance_orders,
    owner_task_hold,
    owner_task_issue,
    owner_task_unhold,
)
from apps.governance.permissions import (
    require_governor,
    require_operator,
    require_tenant_takes_new_work,
)
from apps.governance.retention import policy, selectors, sweeper
from apps.tenancy.audit import audit_record, diff, snapshot

logger = logging.getLogger(__name__)
RULE_FIELDS = ["name", "data_class", "store", "period_days", "action", "locked", "enabled"]
Action = RetentionRule.Action


# --------------------------------------------------------------------------- rules


def _check_rule(rule: RetentionRule) -> None:
    if not rule.name.strip():
        raise ValidationFailed("Name the rule.", code=GovernanceCode.NAME_REQUIRED, field="name")
    if rule.data_class_id is None and rule.store_id is None:
        raise ValidationFailed(
            "A rule covers a data class, a store, or a store of a data class: name one.",
            code=GovernanceCode.SCOPE_REQUIRED,
            field="data_class",
        )
    if (
        rule.store_id is not None
        and rule.data_class_id is not None
        and rule.store.data_class_id != rule.data_class_id
    ):
        raise ValidationFailed(
            f"Store {rule.store.slug} holds {rule.store.data_class.slug} data, not "
            f"{rule.data_class.slug}: the rule would cover nothing.",
            code=GovernanceCode.SCOPE_MISMATCH,
            field="store",
        )
    if not isinstance(rule.period_days, int) or rule.period_days < 1:
        raise ValidationFailed(
            "The period is a whole number of days, at least 1.",
            code=GovernanceCode.INVALID_PERIOD,
            field="period_days",
        )
    if rule.action not in Action.values:
        raise ValidationFailed(
            f"There is no action {rule.action!r} (one of {', '.join(Action.values)}).",
            field="action",
        )
    own = sweeper.OWN_CLASS.get(rule.data_class.slug) if rule.data_class_id else None
    if own is not None and rule.action not in own.actions:
        raise ValidationFailed(
            f"A rule may ask {' or '.join(own.actions)} of {own.name}, not {rule.action}: "
            "Steward has no archive of its own, and its audit trail is append-only.",
            code=GovernanceCode.RETENTION_ACTION_UNSUPPORTED,
            field="action",
        )
    if own is not None and rule.period_days < own.minimum_days:
        raise ValidationFailed(
            f"{own.name} are kept at least {own.minimum_days} days: the deduplication "
            "window, which a re-drive of lost events relies on.",
            code=GovernanceCode.RETENTION_PERIOD_BELOW_MINIMUM,
            field="period_days",
            minimum_days=own.minimum_days,
        )
    if rule.locked and not rule.enabled:
        raise ValidationFailed(
            "A locked rule is enabled: it cannot be locked and disabled.",
            code=GovernanceCode.LOCKED_RULE_DISABLED,
            field="enabled",
        )
    # What the checks above, with their stable codes, leave to the model: the fields'
    # own limits. The database answers for the name's uniqueness (name_taken).
    rule.full_clean(validate_unique=False, validate_constraints=False)


def rule_create(
    *,
    actor: Actor,
    name: str,
    period_days: int,
    action: str,
    data_class=None,
    store=None,
    locked: bool = False,
    enabled: bool = True,
) -> RetentionRule:
    require_operator(actor, "create a retention rule")
    rule = RetentionRule(
        name=name,
        data_class=data_class,
        store=store,
        period_days=period_days,
        action=action,
        locked=locked,
        enabled=enabled,
        created_by=actor.user,
    )
    _check_rule(rule)
    try:
        with system_scope(), transaction.atomic():
            rule.save()
            audit_record(
                actor=actor,
                action="retention_rule.create",
                instance=rule,
                changes={k: [None, v] for k, v in snapshot(rule, RULE_FIELDS).items()},
            )
    except IntegrityError:
        raise Conflict(
            f"There is a rule named {name!r} already.", code=GovernanceCode.NAME_TAKEN
        ) from None
    return rule


def rule_update(*, actor: Actor, rule: RetentionRule, **changes) -> RetentionRule:
    """Change a rule. A locked rule takes a longer period and nothing else; locking is
    one-way. Refused changes raise and leave the rule as it was."""
    require_operator(actor, "change a retention rule")
    unknown = sorted(set(changes) - set(RULE_FIELDS))
    if unknown:
        raise ValidationFailed(
            f"Unknown fields: {', '.join(unknown)}.", code=CoreCode.UNKNOWN_FIELD
        )
    with system_scope(), transaction.atomic():
        stored = RetentionRule.objects.select_for_update().filter(pk=rule.pk).first()
        if stored is None:
            raise NotFound("The rule is gone.")
        before = snapshot(stored, RULE_FIELDS)
        was = policy.RuleView.of(stored)
        for name, value in changes.items():
            setattr(stored, name, value)
        policy.check_locked(was, policy.RuleView.of(stored))
        _check_rule(stored)
        try:
            with transaction.atomic():
                stored.save()
        except IntegrityError:
            raise Conflict(
                f"There is a rule named {stored.name!r} already.", code=GovernanceCode.NAME_TAKEN
            ) from None
        changed = diff(before, snapshot(stored, RULE_FIELDS))
        if changed:
            audit_record(
                actor=actor, action="retention_rule.update", instance=stored, changes=changed
            )
    return stored


def rule_delete(*, actor: Actor, rule: RetentionRule) -> None:
    require_operator(actor, "delete a retention rule")
    with system_scope(), transaction.atomic():
        stored = RetentionRule.objects.select_for_update().filter(pk=rule.pk).first()
        if stored is None:
            raise NotFound("The rule is gone.")
        policy.check_locked(policy.RuleView.of(stored), None)
        audit_record(
            actor=actor,
            action="retention_rule.delete",
            instance=stored,
            changes={k: [v, None] for k, v in snapshot(stored, RULE_FIELDS).items()},
        )
        stored.delete()


# --------------------------------------------------------------------------- holds


def hold_place(*, actor: Actor, tenant, reason: str, data_class=None, store=None) -> LegalHold:
    """Hold a tenant's data (a store, a data class, or everything): no purge of it
    until the hold is released."""
    if actor.user is None:
        raise ValidationFailed("A person places a legal hold.", code=GovernanceCode.PERSON_REQUIRED)
    require_governor(actor, tenant.pk, "place a legal hold")
    require_tenant_takes_new_work(actor, tenant, "place a legal hold", for_deletion=True)
    if not (reason or "").strip():
        raise ValidationFailed(
            "Say why the data is held.", code=CoreCode.REASON_REQUIRED, field="reason"
        )
    if store is not None and data_class is not None and store.data_class_id != data_class.pk:
        raise ValidationFailed(
            f"Store {store.slug} holds {store.data_class.slug} data, not {data_class.slug}: "
            "the hold would cover nothing.",
            code=GovernanceCode.SCOPE_MISMATCH,
            field="store",
        )
    with tenant_scope(tenant):
        hold = LegalHold.objects.create(
            tenant=tenant, data_class=data_class, store=store, reason=reason, created_by=actor.user
        )
        audit_record(
            actor=actor,
            action="legal_hold.place",
            instance=hold,
            tenant=tenant,
            changes={"scope": [None, hold.scope_label], "reason": [None, reason]},
        )
        _pause_purges(hold)
    return hold


def _open_purges(tenant_id, *, held: bool) -> list[GovernanceTask]:
    """The tenant's open purge tasks, paused (`held`) or going (the caller's scope),
    locked: a receipt arriving meanwhile waits for the hold's decision."""
    return list(
        GovernanceTask.objects.select_for_update(of=("self",))
        .select_related("store")
        .filter(
            tenant_id=tenant_id,
            kind=GovernanceTask.Kind.PURGE,
            status__in=GovernanceTask.OPEN,
            held_at__isnull=not held,
        )
        .order_by("issued_at", "id")
    )


def _pause_purges(hold: LegalHold) -> int:
    """A hold placed after a purge was issued (a night's, or a retired binding's)
    pauses it: the owner is told to stop, and its receipt is refused until the release."""
    view = policy.HoldView.of(hold)
    paused = 0
    for task in _open_purges(hold.tenant_id, held=False):
        if policy.hold_covers(view, selectors.purge_task_target(task)):
            owner_task_hold(task=task, hold_id=hold.pk)
            paused += 1
    return paused


def _resume_purges(tenant_id) -> int:
    """The tenant's paused purges that no active hold covers any more go on, due afresh."""
    holds = [policy.HoldView.of(h) for h in selectors.active_legal_holds(tenant_id)]
    due_at = timezone.now() + selectors.purge_task_due_after()
    resumed = 0
    for task in _open_purges(tenant_id, held=True):
        target = selectors.purge_task_target(task)
        if not any(policy.hold_covers(hold, target) for hold in holds):
            owner_task_unhold(task=task, due_at=due_at)
            resumed += 1
    return resumed


def hold_release(*, actor: Actor, hold: LegalHold, reason: str) -> LegalHold:
    if actor.user is None:
        raise ValidationFailed(
            "A person releases a legal hold.", code=GovernanceCode.PERSON_REQUIRED
        )
    require_governor(actor, hold.tenant_id, "release a legal hold")
    if not (reason or "").strip():
        raise ValidationFailed(
            "Say why the hold is released.",
            code=CoreCode.REASON_REQUIRED,
            field="release_reason",
        )
    with tenant_scope(hold.tenant_id):
        released = LegalHold.objects.filter(pk=hold.pk, released_at__isnull=True).update(
            released_at=timezone.now(), released_by=actor.user, release_reason=reason
        )
        if not released:
            raise Conflict("The hold is released already.", code=GovernanceCode.HOLD_RELEASED)
        hold.refresh_from_db()
        audit_record(
            actor=actor,
            action="legal_hold.release",
            instance=hold,
            tenant=hold.tenant_id,
            changes={
                "released_at": [None, hold.released_at.isoformat()],
                "release_reason": [None, reason],
            },
        )
        _resume_purges(hold.tenant_id)
    return hold


# --------------------------------------------------------------------------- the sweep


def night_of(moment: datetime) -> date:
    return timezone.localtime(moment, timezone.get_fixed_timezone(0)).date()


def purge_key(purge: policy.PlannedPurge, night: date) -> str:
    """One purge task per night, tenant, store and rule: what makes a second run of
    the night issue nothing new."""
    target = purge.target
    return f"retention:{night.isoformat()}:{target.tenant_id}:{target.store_id}:{purge.rule.id}"


def purge_owner_task_issue(
    purge: policy.PlannedPurge, *, night: date
) -> tuple[GovernanceTask, bool]:
    """The purge owner task for `purge`, addressed to the store's owning service and announced
    to it (GovernanceTaskIssued on its task topic); (task, issued now). A task of the
    same key issued earlier the same night is answered instead."""
    key = purge_key(purge, night)
    target = purge.target
    with tenant_scope(target.tenant_id):
        existing = GovernanceTask.objects.filter(
            kind=GovernanceTask.Kind.PURGE, detail__key=key
        ).first()
        if existing is not None:
            return existing, False
        task = owner_task_issue(
            tenant_id=target.tenant_id,
            owner=target.label("owner"),
            kind=GovernanceTask.Kind.PURGE,
            store_id=target.store_id,
            due_at=purge.due_at,
            detail={
                "key": key,
                "rule": purge.rule.name,
                "rule_id": purge.rule.id,
                "action": purge.action,
                "cutoff": purge.cutoff.isoformat(),
                "store": target.label("store"),
                "data_class": target.label("data_class"),
                "binding_id": str(target.binding_id),
                "night": night.isoformat(),
            },
        )
        audit_record(
            actor=SYSTEM_ACTOR,
            action="retention.purge_task.issue",
            instance=task,
            tenant=target.tenant_id,
            changes={"rule": [None, purge.rule.name], "action": [None, purge.action]},
        )
    return task, True


def own_tables_sweep_now() -> dict:
    """The hour's sweep of Steward's own tables (governance.periodic_sweep_own_tables),
    under the rules and holds as they are now; the night's sweep records its own."""
    return sweeper.sweep_own_tables(selectors.own_decisions(timezone.now()))


def retired_binding_purges_now() -> dict:
    """The minute's round (`governance.periodic_advance_orders`, after the orders'):
    purge tasks for the retired bindings that are owed one, with the holds as they are
    now. Stores never imports governance: governance finds the retired bindings."""
    return retired_binding_purges(as_of=timezone.now(), holds=selectors.active_hold_views())


def advance_round() -> dict:
    """The minute's round: the orders' (orders.services.advance_orders), then the
    retired bindings' purge tasks."""
    done = advance_orders()
    retired = retired_binding_purges_now()
    return {**done, "retired_purges": len(retired["issued"]), "retired_held": len(retired["held"])}


def retired_binding_purges(*, as_of: datetime, holds: list[policy.HoldView]) -> dict:
    """Issue its owner a purge task for each retired binding whose data is not yet
    recorded gone and that has none: the action the effective retention rule says
    (delete when no rule covers the store), all of the binding's data. A legal hold
    covering the binding pauses it: no task while the hold stands (the binding is listed
    as held), issued by the first round after its release. The owner's receipt records
    the data gone on the binding (orders.services, binding_record_data_purged)."""
    rules = selectors.enabled_rule_views()
    due_at = as_of + selectors.purge_task_due_after()
    issued, held = [], []
    for target in selectors.retired_purge_targets():
        rule = policy.effective_rule(rules, target)
        holding = [hold for hold in holds if policy.hold_covers(hold, target)]
        if holding:
            held.append(
                {
                    "tenant": target.label("tenant"),
                    "store": target.label("store"),
                    "binding": str(target.binding_id),
                    "rule": rule.name if rule else None,
                    "holds": [str(hold.id) for hold in holding],
                    "reasons": [hold.reason for hold in holding],
                }
            )
            continue
        task, new = retired_purge_owner_task_issue(target, rule=rule, due_at=due_at)
        if new:
            issued.append(
                {
                    "task": str(task.pk),
                    "tenant": target.label("tenant"),
                    "store": target.label("store"),
                    "binding": str(target.binding_id),
                    "owner": task.owner,
                    "rule": task.detail["rule"],
                    "action": task.detail["action"],
                }
            )
    return {"issued": issued, "held": held}


def retired_purge_owner_task_issue(
    target: policy.Target, *, rule: policy.RuleView | None, due_at: datetime
) -> tuple[GovernanceTask, bool]:
    """The purge owner task of a retired binding, once; (task, issued now)."""
    key = selectors.retired_purge_key(target)
    action = rule.action if rule else RetentionRule.Action.DELETE
    with tenant_scope(target.tenant_id):
        existing = selectors.retired_purge_task(target)
        if existing is not None:
            return existing, False
        task = owner_task_issue(
            tenant_id=target.tenant_id,
            owner=target.label("owner"),
            kind=GovernanceTask.Kind.PURGE,
            store_id=target.store_id,
            due_at=due_at,
            detail={
                "key": key,
                "reason": "binding retired",
                "rule": rule.name if rule else None,
                "rule_id": rule.id if rule else None,
                "action": action,
                "cutoff": None,  # all of the binding's data
                "store": target.label("store"),
                "data_class": target.label("data_class"),
                "binding": str(target.binding_id),
                "binding_id": str(target.binding_id),
                "binding_status": target.label("binding_status"),
                "retired": True,
            },
        )
        audit_record(
            actor=SYSTEM_ACTOR,
            action="retention.purge_task.issue",
            instance=task,
            tenant=target.tenant_id,
            changes={"rule": [None, rule.name if rule else None], "action": [None, action]},
        )
    return task, True


def _merge_tables(previous: dict, now: dict) -> dict:
    merged = {}
    for label, result in now.items():
        before = previous.get(label, {})
        merged[label] = {
            **result,
            "rows": before.get("rows", 0) + result["rows"],
            "batches": before.get("batches", 0) + result["batches"],
        }
        if before.get("max_lock_ms", 0) > result["max_lock_ms"]:
            merged[label]["max_lock_ms"] = before["max_lock_ms"]
            merged[label]["longest_batch_rows"] = before.get("longest_batch_rows", 0)
        if "files_removed" in result:
            merged[label]["files_removed"] = (
                before.get("files_removed", 0) + result["files_removed"]
            )
    return merged


def sweep_request() -> datetime:
    """Run tonight's sweep now, on a worker, as the nightly schedule would: a run the
    same night again works against the night's `as_of`, so it issues and purges nothing
    the nightly run would not. Answers the moment to follow the sweep from
    (selectors.sweep_run_state): a sweep already running is that one, and a second run
    asked for meanwhile would only be skipped, so none is started."""
    running_since = selectors.sweep_running_since()
    if running_since is not None:
        return running_since
    enqueue_on_commit(selectors.SWEEP_TASK)
    return timezone.now()


def sweep_run(*, now: datetime | None = None) -> RetentionSweep:
    """Tonight's sweep. The night's record fixes `as_of` at the first run, so running it
    again the same night (a retry, a second beat) plans the same purges, finds their tasks
    issued, and finds nothing more expired in Steward's tables."""
    # A second sweep started meanwhile waits, then finds the night's tasks issued and
    # its rows gone.
    with advisory_lock("governance.retention_sweep"):
        return _sweep_night(now or timezone.now())


def _sweep_night(now: datetime) -> RetentionSweep:
    night = night_of(now)
    with system_scope(), transaction.atomic():
        sweep, _ = RetentionSweep.objects.get_or_create(night=night, defaults={"as_of": now})
        RetentionSweep.TRANSITIONS.move(
            sweep, RetentionSweep.Status.RUNNING, runs=F("runs") + 1, error=""
        )
    try:
        results = _sweep(sweep)
    except Exception as exc:
        with system_scope(), transaction.atomic():
            RetentionSweep.TRANSITIONS.move(
                sweep,
                RetentionSweep.Status.FAILED,
                finished_at=timezone.now(),
                error=f"{type(exc).__name__}: {exc}"[:2000],
            )
        raise
    with system_scope(), transaction.atomic():
        RetentionSweep.TRANSITIONS.move(
            sweep,
            RetentionSweep.Status.SUCCEEDED,
            results=results,
            finished_at=timezone.now(),
        )
    return sweep


def _sweep(sweep: RetentionSweep) -> dict:
    previous = sweep.results or {}
    holds = selectors.active_hold_views()
    plan = selectors.plan_at(sweep.as_of, holds=holds)
    issued = already = 0
    tasks = []
    for purge in plan.purges:
        task, new = purge_owner_task_issue(purge, night=sweep.night)
        issued += new
        already += not new
        tasks.append(
            {
                "task": str(task.pk),
                "tenant": purge.target.label("tenant"),
                "store": purge.target.label("store"),
                "owner": task.owner,
                "rule": purge.rule.name,
                "action": purge.action,
                "cutoff": purge.cutoff.isoformat(),
                "due_at": purge.due_at.isoformat(),
            }
        )
    tables = sweeper.sweep_own_tables(selectors.own_decisions(sweep.as_of, holds=holds))
    tables = _merge_tables(previous.get("tables", {}), tables)
    return {
        "as_of": sweep.as_of.isoformat(),
        "purge_tasks": {
            "planned": len(plan.purges),
            "issued": previous.get("purge_tasks", {}).get("issued", 0) + issued,
            "issued_this_run": issued,
            "already_issued": already,
            "tasks": tasks,
        },
        "held": [
            {
                "tenant": h.target.label("tenant"),
                "store": h.target.label("store"),
                "rule": h.rule.name,
                "holds": [str(hold.id) for hold in h.holds],
                "reasons": [hold.reason for hold in h.holds],
            }
            for h in plan.held
        ],
        "uncovered": len(plan.uncovered),
        "tables": tables,
        "rows_purged": sum(t["rows"] for t in tables.values()),
        "batches": sum(t["batches"] for t in tables.values()),
        "max_lock_ms": max((t["max_lock_ms"] for t in tables.values()), default=0),
        "traces": selectors.traces_note(),
    }
