"""Store bindings: residency and workload evaluated, credentials by reference only.

SetStoreBinding evaluates residency (tenant, the store's data class, region) and
workload gating (the store's workload class, the profile). Refused, the binding is
recorded as Refused with the verdict that refused it and nothing is provisioned.
Allowed, it is Requested and a worker asks the secret broker for credentials; the
references make it Provisioned. Provisioning reports the migrations applied (Active);
retiring revokes the credentials (Retiring → Retired). Every status change is a
conditional UPDATE along TRANSITIONS, a history row and a StoreBindingChanged event.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, InvalidTransition
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.stores import residency
from apps.stores.gating import WorkloadVerdict, evaluate_workload
from apps.stores.models import (
    LIVE_STATUSES,
    ProfileCertification,
    ResidencyRule,
    StoreBinding,
    StoreBindingChange,
)
from apps.tenancy.audit import audit_record

TOPIC = "stores.binding"
logger = logging.getLogger(__name__)
Status = StoreBinding.Status

# The only moves a binding makes; anything else is refused with 409.
TRANSITIONS = {
    Status.REQUESTED: {Status.PROVISIONED, Status.FAILED},
    Status.PROVISIONED: {Status.ACTIVE, Status.RETIRING, Status.FAILED},
    Status.ACTIVE: {Status.RETIRING},
    Status.RETIRING: {Status.RETIRED, Status.FAILED},
    Status.REFUSED: set(),
    Status.RETIRED: set(),
    Status.FAILED: set(),
}


# --------------------------------------------------------------------------- evaluation


def rule_views(**filters) -> list[residency.RuleView]:
    """The residency rules the current scope sees (its tenant's and all tenants')."""
    rules = ResidencyRule.objects.filter(**filters).prefetch_related("regions")
    rules = rules.select_related("tenant", "data_class")
    return [residency.RuleView.of(rule) for rule in rules]


def live_certification(profile, workload: str):
    return ProfileCertification.objects.filter(
        profile=profile, workload_class=workload, revoked_at__isnull=True
    ).first()


def evaluate(
    *, tenant_id, store, profile, region, rules=None
) -> tuple[residency.ResidencyVerdict, WorkloadVerdict]:
    """Both verdicts for binding `store` for the tenant on `profile` in `region`."""
    rules = rule_views() if rules is None else rules
    where = residency.evaluate_residency(
        rules, tenant_id=tenant_id, data_class_id=store.data_class_id, region=region
    )
    how = evaluate_workload(
        store.workload_class, profile, live_certification(profile, store.workload_class)
    )
    return where, how


# --------------------------------------------------------------------------- bindings


def _event(binding: StoreBinding, event_type: str = "StoreBindingChanged", **payload) -> None:
    emit(
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="store_binding",
        aggregate_id=str(binding.pk),
        payload={
            "binding_id": str(binding.pk),
            "store": binding.store.slug,
            "tenant_id": str(binding.tenant_id),
            "profile": binding.profile.slug,
            "region": binding.region.slug,
            "status": binding.status,
            "reason": binding.status_reason,
            # References only: the secrets stay with the broker.
            "key_reference": binding.key_reference,
            "connection_reference": binding.connection_reference,
            **payload,
        },
        tenant=binding.tenant_id,
    )


def _history(binding, from_status: str, actor_label: str) -> None:
    StoreBindingChange.objects.create(
        binding=binding,
        tenant_id=binding.tenant_id,
        from_status=from_status,
        to_status=binding.status,
        reason=binding.status_reason,
        actor_label=actor_label[:150],
    )


def binding_set(*, actor: Actor, tenant, store, profile, region) -> StoreBinding:
    """SetStoreBinding. The live binding of the same store, profile and region is
    answered as it is (the request is a repeat); one that differs is a conflict."""
    with tenant_scope(tenant):
        live = StoreBinding.objects.filter(
            tenant=tenant, store=store, status__in=LIVE_STATUSES
        ).first()
        if live is not None:
            if live.profile_id == profile.pk and live.region_id == region.pk:
                return live
            raise Conflict(
                f"{store.slug} is already bound for this tenant ({live.status}, on "
                f"{live.profile.slug} in {live.region.slug}); retire that binding first.",
                code="binding_exists",
                binding=str(live.pk),
            )
        where, how = evaluate(tenant_id=tenant.pk, store=store, profile=profile, region=region)
        refusals = ([] if where.allowed else [where.explanation]) + (
            [] if how.allows else list(how.reasons)
        )
        binding = StoreBinding(
            tenant=tenant,
            store=store,
            profile=profile,
            region=region,
            status=Status.REFUSED if refusals else Status.REQUESTED,
            status_reason=" ".join(refusals) or "Residency and workload allow it.",
            residency_verdict=where.as_dict(),
            workload_verdict=how.as_dict(),
        )
        try:
            with transaction.atomic():
                binding.save()
        except IntegrityError:
            # A concurrent SetStoreBinding won: answer as if it had come first.
            return binding_set(
                actor=actor, tenant=tenant, store=store, profile=profile, region=region
            )
        _history(binding, "", actor.label)
        audit_record(
            actor=actor,
            action="store_binding.set",
            instance=binding,
            tenant=tenant,
            changes={"status": [None, binding.status]},
        )
        _event(binding)
        if binding.status == Status.REQUESTED:
            enqueue_on_commit("stores.provision_binding", binding_id=str(binding.pk))
    return binding


def _transition(
    binding: StoreBinding, to: str, *, reason: str, actor_label: str, **changes
) -> StoreBinding:
    """Move along TRANSITIONS, conditionally on the status it was in; 409 otherwise.
    In the binding's tenant scope, which the caller holds or gets here."""
    sources = [status for status, targets in TRANSITIONS.items() if to in targets]
    with owner_scope(binding.tenant_id):
        binding.refresh_from_db()
        before = binding.status
        updated = StoreBinding.objects.filter(pk=binding.pk, status=before).update(
            status=to, status_reason=reason, updated_at=timezone.now(), **changes
        )
        if before not in sources or not updated:
            binding.refresh_from_db()
            raise InvalidTransition(
                f"The binding is {binding.status}; it cannot become {to}.",
                status=binding.status,
            )
        binding.refresh_from_db()
        _history(binding, before, actor_label)
        _event(binding)
    return binding


def binding_provision(*, binding_id) -> str:
    """Ask the secret broker for the binding's credentials (a worker's job).

    An uncertain effect keyed by the binding: answered, the references are recorded
    at once; timed out, the reconciler asks the broker what it holds and settles the
    binding either way, so no binding stays half-provisioned unexplained.
    """
    from apps.eventing.effects import perform_effect
    from apps.stores import brokers

    with system_scope():
        binding = (
            StoreBinding.objects.select_related("store", "profile", "region", "tenant")
            .filter(pk=binding_id)
            .first()
        )
    if binding is None or binding.status != Status.REQUESTED:
        return "nothing to do"

    def issue() -> dict:
        key, connection = brokers.get_broker().issue_credentials(binding)
        return {"key_reference": key, "connection_reference": connection}

    effect = perform_effect(
        tenant_id=binding.tenant_id,
        actor="stores",
        target_system=brokers.TARGET,
        operation=brokers.ISSUE,
        external_ref=str(binding.pk),
        call=issue,
    )
    if effect.state == effect.State.UNCERTAIN:
        with tenant_scope(binding.tenant_id):
            StoreBinding.objects.filter(pk=binding.pk, status=Status.REQUESTED).update(
                status_reason="Waiting on the secret broker: the issue call timed out and is "
                "being reconciled.",
                updated_at=timezone.now(),
            )
    else:
        binding_record_credentials(effect)
    return effect.state


def binding_record_credentials(effect) -> None:
    """Settle a Requested binding from its settled issue effect: Provisioned with the
    references, or Failed with the broker's error."""
    with system_scope():
        binding = StoreBinding.objects.filter(pk=effect.external_ref).first()
    if binding is None or binding.status != Status.REQUESTED:
        return
    if effect.state == effect.State.SUCCEEDED:
        _transition(
            binding,
            Status.PROVISIONED,
            reason="Credentials issued; waiting for provisioning to apply the migrations.",
            actor_label="secret-broker",
            key_reference=effect.result["key_reference"],
            connection_reference=effect.result["connection_reference"],
        )
    else:
        error = effect.last_error or effect.result.get("error", "the broker refused")
        _transition(
            binding,
            Status.FAILED,
            reason=f"The secret broker did not issue credentials: {error}",
            actor_label="secret-broker",
        )


def binding_migrations_applied(*, actor: Actor, binding: StoreBinding) -> StoreBinding:
    return _transition(
        binding,
        Status.ACTIVE,
        reason="Provisioning applied the store's migrations.",
        actor_label=actor.label,
    )


def binding_retire(*, actor: Actor, binding: StoreBinding, reason: str = "") -> StoreBinding:
    binding = _transition(
        binding,
        Status.RETIRING,
        reason=reason or "Retirement requested; revoking the credentials.",
        actor_label=actor.label,
    )
    enqueue_on_commit("stores.revoke_binding", binding_id=str(binding.pk))
    return binding


def binding_revoke(*, binding_id) -> str:
    """Revoke a retiring binding's credentials at the broker, then mark it Retired."""
    from apps.stores import brokers

    with system_scope():
        binding = StoreBinding.objects.filter(pk=binding_id, status=Status.RETIRING).first()
    if binding is None:
        return "nothing to do"
    broker = brokers.get_broker()
    try:
        for reference in (binding.key_reference, binding.connection_reference):
            if reference:
                broker.revoke(reference)
    except Exception as exc:  # noqa: BLE001 - the broker's failure is explained, then retried
        logger.warning("revoking the credentials of binding %s failed: %s", binding.pk, exc)
        with tenant_scope(binding.tenant_id):
            StoreBinding.objects.filter(pk=binding.pk, status=Status.RETIRING).update(
                status_reason=f"Revoking the credentials failed ({type(exc).__name__}); "
                "retried every minute.",
                updated_at=timezone.now(),
            )
        return "retry"
    _transition(binding, Status.RETIRED, reason="Credentials revoked.", actor_label="secret-broker")
    return "retired"


def resume_stalled_bindings(*, older_than: timedelta | None = None) -> int:
    """The sweep behind lost work: a Requested binding whose issue call is not already
    being reconciled, and a Retiring one, untouched for a while, go again. Both steps
    are idempotent (the issue call is keyed by the binding; revoking twice is fine)."""
    from apps.eventing.models import UncertainEffect
    from apps.stores import brokers

    if older_than is None:
        older_than = timedelta(seconds=settings.STEWARD_STALLED_WORK_SECONDS)
    cutoff = timezone.now() - older_than
    with system_scope():
        stalled = StoreBinding.objects.filter(updated_at__lt=cutoff)
        requested = set(stalled.filter(status=Status.REQUESTED).values_list("pk", flat=True))
        retiring = list(stalled.filter(status=Status.RETIRING).values_list("pk", flat=True))
        reconciling = set(
            UncertainEffect.objects.filter(
                target_system=brokers.TARGET, state=UncertainEffect.State.UNCERTAIN
            ).values_list("external_ref", flat=True)
        )
    resumed = 0
    for binding_id in requested:
        if str(binding_id) not in reconciling:
            binding_provision(binding_id=binding_id)
            resumed += 1
    for binding_id in retiring:
        binding_revoke(binding_id=binding_id)
        resumed += 1
    return resumed


# --------------------------------------------------------------------------- residency rules


# The live bindings a rule change is checked against: Requested ones too, which
# would otherwise become Provisioned under a rule that no longer allows them.
CHECKED = [Status.REQUESTED, Status.PROVISIONED, Status.ACTIVE]


def flag_violations(rules=None) -> list[StoreBinding]:
    """Check every Requested, Provisioned and Active binding against the rules now in force.

    A binding the rules no longer allow is flagged (and ResidencyViolationDetected
    emitted, once); one allowed again is cleared. Statuses never change: moving or
    deleting a tenant's store is a person's decision. Returns the newly flagged.
    """
    if rules is None:
        with system_scope():
            rules = rule_views()
    flagged = []
    for binding, verdict in _checked_bindings(rules):
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
    return flagged


def would_violate(rules) -> list[tuple[StoreBinding, residency.ResidencyVerdict]]:
    """The live bindings `rules` would not allow (a preview)."""
    return [(b, verdict) for b, verdict in _checked_bindings(rules) if not verdict.allowed]


def _checked_bindings(rules):
    """Each live binding (by tenant and store) with what `rules` say of it."""
    with system_scope():
        bindings = list(
            StoreBinding.objects.filter(status__in=CHECKED)
            .select_related("store", "profile", "region", "tenant")
            .order_by("tenant__slug", "store__slug")
        )
    for binding in bindings:
        yield (
            binding,
            residency.evaluate_residency(
                rules,
                tenant_id=binding.tenant_id,
                data_class_id=binding.store.data_class_id,
                region=binding.region,
            ),
        )


def proposed_rules(
    *, replacing: ResidencyRule | None = None, proposal: residency.RuleView | None
) -> list[residency.RuleView]:
    """Every rule in force, with `replacing` swapped for `proposal` (or dropped)."""
    with system_scope():
        rules = [r for r in rule_views() if replacing is None or r.id != replacing.pk]
    return rules + ([proposal] if proposal is not None else [])


def rule_save(
    *, actor: Actor, rule: ResidencyRule, regions, changes: dict | None = None
) -> ResidencyRule:
    """Create or change a rule (in its tenant's scope, or the system scope for all
    tenants), then flag the bindings it now makes non-compliant."""
    if rule.is_exception and not rule.reason.strip():
        from apps.core.errors import ValidationFailed

        raise ValidationFailed(
            "An exception needs a reason.", code="reason_required", field="reason"
        )
    creating = rule.pk is None
    if not creating:
        with system_scope():
            stored = ResidencyRule.objects.filter(pk=rule.pk).values_list("tenant_id", flat=True)
            if stored.first() != rule.tenant_id:
                from apps.core.errors import ValidationFailed

                raise ValidationFailed(
                    "A rule's tenant cannot change; create a rule for the other tenant.",
                    code="tenant_immutable",
                    field="tenant",
                )
    with owner_scope(rule.tenant_id):
        rule.save()
        rule.regions.set(regions)
        audit_record(
            actor=actor,
            action="residency_rule.create" if creating else "residency_rule.update",
            instance=rule,
            tenant=rule.tenant_id,
            changes=changes or {"rule": [None, str(rule)]},
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


# --------------------------------------------------------------------------- certification


def certification_record(
    *, actor: Actor, profile, workload_class: str, benchmark_reference: str, notes: str = ""
) -> ProfileCertification:
    """Certify a profile for a workload on recorded benchmark evidence (one live record
    per profile and workload: revoke the old one to re-certify)."""
    from apps.core.errors import ValidationFailed

    if not benchmark_reference.strip():
        raise ValidationFailed(
            "Certification needs the benchmark evidence.", code="evidence_required"
        )
    record = ProfileCertification(
        profile=profile,
        workload_class=workload_class,
        certified_by=actor.label[:150],
        benchmark_reference=benchmark_reference,
        notes=notes,
    )
    try:
        with system_scope(), transaction.atomic():
            record.save()
            audit_record(
                actor=actor,
                action="profile.certify",
                instance=profile,
                changes={
                    "certified_for": [None, workload_class],
                    "evidence": [None, benchmark_reference],
                },
            )
    except IntegrityError:
        raise Conflict(
            f"{profile.slug} is already certified for {workload_class}; revoke that first.",
            code="already_certified",
        ) from None
    return record


def certification_revoke(*, actor: Actor, record: ProfileCertification) -> ProfileCertification:
    with system_scope():
        updated = ProfileCertification.objects.filter(pk=record.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if updated:
            audit_record(
                actor=actor,
                action="profile.revoke_certification",
                instance=record.profile,
                changes={"certified_for": [record.workload_class, None]},
            )
        record.refresh_from_db()
    return record
