"""Residency rules: writing them, and flagging the bindings the rules in force no longer
allow (statuses never change: an operator decides)."""

from __future__ import annotations

from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import ValidationFailed
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.stores import selectors
from apps.stores.codes import StoreCode
from apps.stores.models import ResidencyRule, StoreBinding
from apps.stores.services.bindings import _event, tenant_refusal
from apps.tenancy.audit import audit_record, diff, snapshot

Status = StoreBinding.Status


def flag_violations(rules=None) -> list[StoreBinding]:
    """Check every Requested, Provisioned and Active binding against the rules now in force.

    A binding the rules no longer allow is flagged (and ResidencyViolationDetected
    emitted, once); one allowed again is cleared. Statuses never change: moving or
    deleting a tenant's store is a person's decision. Returns the newly flagged.
    """
    if rules is None:
        with system_scope():
            rules = selectors.rule_views()
    flagged = []
    for binding, verdict in selectors.checked_bindings(rules):
        with tenant_scope(binding.tenant_id):
            if not verdict.allowed and not binding.violation:
                flagged_now = StoreBinding.objects.filter(pk=binding.pk, violation="").update(
                    violation=verdict.explanation, violation_detected_at=timezone.now()
                )
                if not flagged_now:  # a concurrent check flagged it first
                    continue
                binding.violation = verdict.explanation
                _event(
                    binding,
                    "ResidencyViolationDetected",
                    violation=verdict.explanation,
                    rule_id=verdict.rule_id,
                )
                flagged.append(binding)
            elif verdict.allowed and binding.violation:
                StoreBinding.objects.filter(pk=binding.pk).update(
                    violation="", violation_detected_at=None
                )
                if binding.status == Status.REQUESTED:  # the worker may provision it now
                    enqueue_on_commit("stores.provision_binding", binding_id=str(binding.pk))
    return flagged


# The fields a rule is written with, and what the audit trail records of it.
RULE_FIELDS = ["tenant", "data_class", "effect", "geographies", "is_exception", "reason"]


def _rule_snapshot(rule: ResidencyRule, regions) -> dict:
    return {
        "rule": str(rule),
        **snapshot(rule, RULE_FIELDS),
        "regions": sorted(region.slug for region in regions),
    }


def rule_create(
    *,
    actor: Actor,
    effect: str,
    tenant=None,
    data_class=None,
    regions=(),
    geographies=(),
    is_exception: bool = False,
    reason: str = "",
) -> ResidencyRule:
    """Create a rule (in its tenant's scope, or the system scope for all tenants), then
    flag the bindings it makes non-compliant."""
    rule = ResidencyRule(
        tenant=tenant,
        data_class=data_class,
        effect=effect,
        geographies=list(geographies),
        is_exception=is_exception,
        reason=reason,
    )
    _require_reason(rule)
    return _rule_write(actor=actor, rule=rule, regions=list(regions), before={})


def rule_update(*, actor: Actor, rule: ResidencyRule, **changes) -> ResidencyRule:
    """Change a rule's fields (any of rule_create's; without `regions` its regions stay),
    then flag the bindings it now makes non-compliant. A rule's tenant never changes."""
    unknown = set(changes) - {*RULE_FIELDS, "regions"}
    if unknown:
        raise TypeError(f"rule_update() got fields it does not change: {sorted(unknown)}")
    with system_scope():
        stored = selectors.rule_list().get(pk=rule.pk)
    before = _rule_snapshot(stored, stored.regions.all())
    regions = list(changes.pop("regions", stored.regions.all()))
    tenant_id = stored.tenant_id
    for name, value in changes.items():
        setattr(stored, name, value)
    _require_reason(stored)
    if stored.tenant_id != tenant_id:
        raise ValidationFailed(
            "A rule's tenant cannot change; create a rule for the other tenant.",
            code=StoreCode.TENANT_IMMUTABLE,
            field="tenant",
        )
    return _rule_write(actor=actor, rule=stored, regions=regions, before=before)


def _require_reason(rule: ResidencyRule) -> None:
    if rule.is_exception and not rule.reason.strip():
        raise ValidationFailed(
            "An exception needs a reason.", code=CoreCode.REASON_REQUIRED, field="reason"
        )


def _rule_write(*, actor: Actor, rule: ResidencyRule, regions: list, before: dict):
    """Validate, save and audit a rule in its owner's scope, then flag what it changes."""
    creating = rule.pk is None
    with owner_scope(rule.tenant_id):
        # A new rule for a tenant being deleted is new data its deletion would not reach.
        refusal = tenant_refusal(rule.tenant_id, lock=True) if creating and rule.tenant_id else None
        if refusal is not None:
            raise refusal
        rule.full_clean()
        rule.save()
        rule.regions.set(regions)
        audit_record(
            actor=actor,
            action="residency_rule.create" if creating else "residency_rule.update",
            instance=rule,
            tenant=rule.tenant_id,
            changes=diff(before, _rule_snapshot(rule, regions)),
        )
    flag_violations()
    return rule


def rule_delete(*, actor: Actor, rule: ResidencyRule) -> None:
    with owner_scope(rule.tenant_id):
        audit_record(
            actor=actor,
            action="residency_rule.delete",
            instance=rule,
            tenant=rule.tenant_id,
            changes={"rule": [str(rule), None]},
        )
        rule.delete()
    flag_violations()
