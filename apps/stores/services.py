"""Store bindings: residency and workload evaluated, credentials by reference only.

SetStoreBinding evaluates residency (tenant, the store's data class, region) and
workload gating (the store's workload class, the profile). Refused, the binding is
recorded as Refused with the verdict that refused it and nothing is provisioned.
Allowed, it is Requested and a worker asks the secret broker for credentials; the
references make it Provisioned. Provisioning reports the migrations applied (Active);
retiring revokes the credentials (Retiring → Retired). Every status change is a
conditional UPDATE along StoreBinding.TRANSITIONS, a history row and a
StoreBindingChanged event.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.eventing.effects import perform_effect
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, selectors
from apps.stores.codes import StoreCode
from apps.stores.models import (
    LIVE_STATUSES,
    BenchmarkResult,
    ContractTestResult,
    PhysicalizationPolicy,
    ProfileCertification,
    ResidencyRule,
    StoreBinding,
    StoreBindingChange,
)
from apps.tenancy.audit import audit_record, diff, snapshot

TOPIC = "stores.binding"
logger = logging.getLogger(__name__)
Status = StoreBinding.Status


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
                code=StoreCode.BINDING_EXISTS,
                binding=str(live.pk),
            )
        where, how = selectors.binding_verdicts(
            tenant_id=tenant.pk, store=store, profile=profile, region=region
        )
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
    """Move along StoreBinding.TRANSITIONS (409 when the binding may not, or another move
    won), with a history row and an event. In the binding's tenant scope, which the caller
    holds or gets here."""
    with owner_scope(binding.tenant_id):
        # Locked, so no other move comes between: the history names the status moved from.
        locked = StoreBinding.objects.select_for_update().filter(pk=binding.pk)
        before = locked.values_list("status", flat=True).first()
        StoreBinding.TRANSITIONS.move(
            binding,
            to,
            detail=lambda found: f"The binding is {found}; it cannot become {to}.",
            status_reason=reason,
            updated_at=timezone.now(),
            **changes,
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
    with system_scope():
        binding = (
            StoreBinding.objects.select_related("store", "profile", "region", "tenant")
            .filter(pk=binding_id)
            .first()
        )
    if binding is None or binding.status != Status.REQUESTED:
        return "nothing to do"
    refusal = _noncompliance(binding)
    if refusal is not None:
        _record_refused_provisioning(binding, refusal)
        return "refused"

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


def _noncompliance(binding: StoreBinding) -> Conflict | None:
    """Why the rules and evidence in force do not allow the binding now, as the
    refusal the API answers with; None when they allow it."""
    # The binding's tenant's scope sees exactly the rules that apply to it.
    with tenant_scope(binding.tenant_id):
        where = selectors.residency_now(binding)
        how = selectors.workload_now(binding)
    if not where.allowed:
        return Conflict(
            where.explanation,
            code=StoreCode.RESIDENCY_VIOLATION,
            explanation=where.explanation,
            rule_id=where.rule_id,
        )
    if not how.allows:
        explanation = " ".join(how.reasons)
        return Conflict(explanation, code=StoreCode.WORKLOAD_NOT_ALLOWED, explanation=explanation)
    return None


def _record_refused_provisioning(binding: StoreBinding, refusal: Conflict) -> None:
    """The worker does not provision a binding the rules do not allow: the binding stays
    Requested, flagged with the same reason the API gives, for an operator to decide (an
    exception lets the sweep provision it; a rule allowing it again clears the flag)."""
    reason = f"Not provisioned: {refusal.detail}"
    flag = "violation" if refusal.code == StoreCode.RESIDENCY_VIOLATION else "workload_violation"
    with tenant_scope(binding.tenant_id):
        current = StoreBinding.objects.filter(pk=binding.pk, status=Status.REQUESTED)
        newly_flagged = current.filter(**{flag: ""}).update(
            **{flag: refusal.detail, f"{flag}_detected_at": timezone.now()},
            status_reason=reason,
            updated_at=timezone.now(),
        )
        if newly_flagged:
            binding.refresh_from_db()
            if flag == "violation":
                _event(
                    binding,
                    "ResidencyViolationDetected",
                    violation=refusal.detail,
                    rule_id=refusal.extra.get("rule_id"),
                )
        else:
            # Already flagged: keep the reason current without touching `updated_at`
            # otherwise, so the sweep keeps re-checking it every minute.
            current.exclude(status_reason=reason).update(status_reason=reason)


def binding_migrations_applied(*, actor: Actor, binding: StoreBinding) -> StoreBinding:
    """Provisioned → Active, only while the rules and evidence in force allow the
    binding (409 `residency_violation` or `workload_not_allowed` otherwise)."""
    with tenant_scope(binding.tenant_id):
        binding.refresh_from_db()
    if binding.status == Status.PROVISIONED:
        refusal = _noncompliance(binding)
        if refusal is not None:
            raise refusal
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


def binding_retry(*, actor: Actor, binding: StoreBinding) -> str:
    """A person sends a stalled binding's work again now: provisioning a Requested one,
    revoking a Retiring one. Audited; anything else is refused (`binding_not_stalled`)."""
    if binding.status not in (Status.REQUESTED, Status.RETIRING):
        raise Conflict(
            f"The binding is {binding.status}: there is no work of its to send again.",
            code=StoreCode.BINDING_NOT_STALLED,
        )
    with tenant_scope(binding.tenant_id):
        audit_record(
            actor=actor,
            action="store_binding.retry",
            instance=binding,
            tenant=binding.tenant_id,
            changes={"status": [binding.status, binding.status]},
        )
    if binding.status == Status.REQUESTED:
        return binding_provision(binding_id=binding.pk)
    return binding_revoke(binding_id=binding.pk)


# --------------------------------------------------------------------------- residency rules


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


# --------------------------------------------------------------------------- operator decisions

DECIDABLE = (Status.REQUESTED, Status.PROVISIONED, Status.ACTIVE)


def binding_grant_exception(
    *, actor: Actor, binding: StoreBinding, reason: str, expires_at
) -> StoreBinding:
    """An operator's decision on a binding flagged for residency: an exception for this
    binding alone, with a reason and an expiry. It clears the flag until it expires
    (expire_exceptions flags the binding again if the rules still refuse it). The other
    decision is binding_retire."""
    if not (reason or "").strip():
        raise ValidationFailed(
            "An exception needs a reason.", code=StoreCode.REASON_REQUIRED, field="reason"
        )
    if expires_at is None or expires_at <= timezone.now():
        raise ValidationFailed(
            "An exception needs an expiry in the future.",
            code=StoreCode.INVALID_EXPIRY,
            field="expires_at",
        )
    with tenant_scope(binding.tenant_id):
        binding = StoreBinding.objects.select_for_update().get(pk=binding.pk)
        if binding.status not in DECIDABLE:
            raise Conflict(
                f"The binding is {binding.status}; only a Requested, Provisioned or Active "
                "binding can be granted an exception.",
                code=StoreCode.BINDING_NOT_LIVE,
                current_status=binding.status,
            )
        if not binding.violation:
            raise Conflict(
                "The binding is not flagged for residency; there is nothing to except.",
                code=StoreCode.NOT_FLAGGED,
            )
        before = binding.violation
        now = timezone.now()
        StoreBinding.objects.filter(pk=binding.pk).update(
            exception_reason=reason.strip(),
            exception_granted_by=actor.label[:150],
            exception_granted_at=now,
            exception_expires_at=expires_at,
            exception_ended_at=None,
            violation="",
            violation_detected_at=None,
            updated_at=now,
        )
        binding.refresh_from_db()
        _note(
            binding,
            f"Residency exception granted until {expires_at:%Y-%m-%d %H:%M} UTC: "
            f"{binding.exception_reason} (the violation was: {before})",
            actor.label,
        )
        audit_record(
            actor=actor,
            action="store_binding.grant_exception",
            instance=binding,
            tenant=binding.tenant_id,
            changes={
                "exception_reason": [None, binding.exception_reason],
                "exception_expires_at": [None, expires_at.isoformat()],
                "violation": [before, ""],
            },
        )
        _event(
            binding,
            "ResidencyExceptionGranted",
            reason=binding.exception_reason,
            expires_at=expires_at.isoformat(),
            violation=before,
        )
        if binding.status == Status.REQUESTED:
            enqueue_on_commit("stores.provision_binding", binding_id=str(binding.pk))
    return binding


def _note(binding: StoreBinding, reason: str, actor_label: str) -> None:
    """A history row for a decision that does not move the binding."""
    StoreBindingChange.objects.create(
        binding=binding,
        tenant_id=binding.tenant_id,
        from_status=binding.status,
        to_status=binding.status,
        reason=reason,
        actor_label=actor_label[:150],
    )


def expire_exceptions(*, now=None) -> list[StoreBinding]:
    """End every binding exception past its expiry, then check those bindings against
    the rules in force: each one they still refuse is flagged again (and announced).
    Returns the bindings whose exception ended."""
    now = now or timezone.now()
    with system_scope():
        due = list(
            StoreBinding.objects.filter(
                exception_granted_at__isnull=False,
                exception_ended_at__isnull=True,
                exception_expires_at__lte=now,
            ).values_list("pk", "tenant_id")
        )
    ended = []
    for binding_id, tenant_id in due:
        with tenant_scope(tenant_id):
            open_exception = StoreBinding.objects.filter(
                pk=binding_id, exception_ended_at__isnull=True
            )
            if not open_exception.update(exception_ended_at=now):
                continue  # a concurrent sweep ended it
            binding = StoreBinding.objects.get(pk=binding_id)
            _note(binding, "Residency exception expired.", "steward")
            audit_record(
                actor=SYSTEM_ACTOR,
                action="store_binding.exception_expired",
                instance=binding,
                tenant=tenant_id,
                changes={"exception_ended_at": [None, now.isoformat()]},
            )
            _event(binding, "ResidencyExceptionExpired", expired_at=now.isoformat())
            ended.append(binding)
    if ended:
        flag_violations()
    return ended


def expire_certifications(*, now=None) -> list[ProfileCertification]:
    """End every certification past its expiry (recorded as revoked at that moment),
    and re-evaluate the bindings that relied on it."""
    now = now or timezone.now()
    with system_scope():
        due = list(
            ProfileCertification.objects.filter(revoked_at__isnull=True, expires_at__lte=now)
        )
    return [
        certification_revoke(actor=SYSTEM_ACTOR, record=record, why="expired") for record in due
    ]


def expire_exceptions_and_certifications() -> int:
    """The periodic sweep: exceptions and certifications past their expiry end."""
    return len(expire_exceptions()) + len(expire_certifications())


def reevaluate_workload(*, certification: ProfileCertification) -> list[StoreBinding]:
    """Every live binding whose workload verdict may rest on `certification` (its
    profile, its workload) is evaluated again on the evidence in force."""
    return reevaluate_bindings(
        profile_id=certification.profile_id, workload_class=certification.workload_class
    )


def reevaluate_bindings(*, profile_id=None, workload_class=None) -> list[StoreBinding]:
    """The live bindings on `profile_id` (any, if None) of stores of `workload_class`
    (any, if None) are evaluated again on the evidence in force; those no longer allowed
    are flagged, those allowed (on other evidence) are cleared. Returns the newly
    flagged."""
    filters = {"status__in": DECIDABLE}
    if profile_id is not None:
        filters["profile_id"] = profile_id
    if workload_class is not None:
        filters["store__workload_class"] = workload_class
    with system_scope():
        bindings = list(
            StoreBinding.objects.filter(**filters).select_related("store", "profile", "region")
        )
    flagged = []
    for binding in bindings:
        with tenant_scope(binding.tenant_id):
            verdict = selectors.workload_now(binding)
            rows = StoreBinding.objects.filter(pk=binding.pk)
            if not verdict.allows:
                if rows.filter(workload_violation="").update(
                    workload_violation=" ".join(verdict.reasons),
                    workload_violation_detected_at=timezone.now(),
                ):
                    binding.refresh_from_db()
                    _note(
                        binding,
                        f"Workload evidence withdrawn: {binding.workload_violation}",
                        "steward",
                    )
                    flagged.append(binding)
            else:
                rows.update(
                    workload_verdict=verdict.as_dict(),
                    workload_violation="",
                    workload_violation_detected_at=None,
                )
    return flagged


# --------------------------------------------------------------------------- workload evidence


def _require_run(run_reference: str) -> None:
    if not (run_reference or "").strip():
        raise ValidationFailed(
            "Evidence names the run it came from.",
            code=StoreCode.RUN_REQUIRED,
            field="run_reference",
        )


def _record_evidence(actor: Actor, record, action: str, changes: dict, **reevaluate):
    """Save an evidence record and audit it (platform rows: the system scope), then
    re-evaluate the live bindings whose verdict it may change."""
    record.recorded_by = actor.label[:150]
    with system_scope():
        record.full_clean()
        record.save()
        audit_record(actor=actor, action=action, instance=record, changes=changes)
    reevaluate_bindings(**reevaluate)
    return record


def benchmark_record(
    *,
    actor: Actor,
    provider: str,
    query_shape: str,
    figure: float,
    threshold: float,
    passed: bool,
    run_reference: str,
    profile=None,
    unit: str = "",
) -> BenchmarkResult:
    """A benchmark result of one query shape on one provider (on `profile`'s declared
    indexes, or provider-wide without one). The latest per shape and provider decides."""
    _require_run(run_reference)
    record = BenchmarkResult(
        provider=provider,
        query_shape=query_shape,
        profile=profile,
        figure=figure,
        threshold=threshold,
        unit=unit,
        passed=passed,
        run_reference=run_reference,
    )
    return _record_evidence(
        actor,
        record,
        "workload_evidence.benchmark",
        {
            "benchmark": [None, f"{query_shape} on {profile.slug if profile else provider}"],
            "figure": [None, figure],
            "threshold": [None, threshold],
            "passed": [None, passed],
            "run_reference": [None, run_reference],
        },
        profile_id=profile.pk if profile else None,
    )


def contract_test_record(
    *, actor: Actor, provider: str, contract: str, passed: bool, run_reference: str
) -> ContractTestResult:
    """A provider contract test's outcome on one provider."""
    _require_run(run_reference)
    record = ContractTestResult(
        provider=provider, contract=contract, passed=passed, run_reference=run_reference
    )
    return _record_evidence(
        actor,
        record,
        "workload_evidence.contract_test",
        {
            "contract_test": [None, f"{contract} on {provider}"],
            "passed": [None, passed],
            "run_reference": [None, run_reference],
        },
        workload_class="hot_lookup",
    )


def policy_record(
    *,
    actor: Actor,
    profile,
    workload_class: str,
    kind: str,
    rollback_guidance: str,
    run_reference: str,
    description: str = "",
) -> PhysicalizationPolicy:
    """How `profile` physicalizes `workload_class`'s filters, with rollback guidance."""
    _require_run(run_reference)
    if not (rollback_guidance or "").strip():
        raise ValidationFailed(
            "A physicalization policy needs rollback guidance.",
            code=StoreCode.ROLLBACK_GUIDANCE_REQUIRED,
            field="rollback_guidance",
        )
    record = PhysicalizationPolicy(
        profile=profile,
        workload_class=workload_class,
        kind=kind,
        description=description,
        rollback_guidance=rollback_guidance,
        run_reference=run_reference,
    )
    return _record_evidence(
        actor,
        record,
        "workload_evidence.policy",
        {
            "policy": [None, f"{kind} for {workload_class} on {profile.slug}"],
            "run_reference": [None, run_reference],
        },
        profile_id=profile.pk,
        workload_class=workload_class,
    )


# --------------------------------------------------------------------------- data held


def binding_record_data_purged(*, actor: Actor, binding: StoreBinding, receipt: dict):
    """The owning service's receipt says the binding's data is gone (governance calls
    this with the receipt of the purge or deletion task it issued). Only for a binding
    that is no longer live; recorded once (a repeated receipt answers as it is)."""
    with tenant_scope(binding.tenant_id):
        binding = StoreBinding.objects.select_for_update().get(pk=binding.pk)
        if binding.status in LIVE_STATUSES:
            raise Conflict(
                f"The binding is {binding.status}; retire it before recording its data gone.",
                code=StoreCode.BINDING_LIVE,
                current_status=binding.status,
            )
        if binding.data_purged_at is not None:
            return binding
        now = timezone.now()
        StoreBinding.objects.filter(pk=binding.pk).update(
            data_purged_at=now, data_purge_receipt=receipt or {}, updated_at=now
        )
        binding.refresh_from_db()
        _note(binding, "The owner's receipt says the data is gone.", actor.label)
        audit_record(
            actor=actor,
            action="store_binding.data_purged",
            instance=binding,
            tenant=binding.tenant_id,
            changes={"data_purged_at": [None, now.isoformat()]},
        )
    return binding


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
            "An exception needs a reason.", code=StoreCode.REASON_REQUIRED, field="reason"
        )


def _rule_write(*, actor: Actor, rule: ResidencyRule, regions: list, before: dict):
    """Validate, save and audit a rule in its owner's scope, then flag what it changes."""
    creating = rule.pk is None
    with owner_scope(rule.tenant_id):
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


# --------------------------------------------------------------------------- certification


def certification_record(
    *,
    actor: Actor,
    profile,
    workload_class: str,
    benchmark_reference: str,
    notes: str = "",
    expires_at=None,
) -> ProfileCertification:
    """Certify a profile for a workload on recorded benchmark evidence (one live record
    per profile and workload: revoke the old one to re-certify)."""
    if not benchmark_reference.strip():
        raise ValidationFailed(
            "Certification needs the benchmark evidence.", code=StoreCode.EVIDENCE_REQUIRED
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed(
            "A certification's expiry must be in the future.",
            code=StoreCode.INVALID_EXPIRY,
            field="expires_at",
        )
    record = ProfileCertification(
        profile=profile,
        workload_class=workload_class,
        certified_by=actor.label[:150],
        benchmark_reference=benchmark_reference,
        notes=notes,
        expires_at=expires_at,
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
            code=StoreCode.ALREADY_CERTIFIED,
        ) from None
    return record


def certification_revoke(
    *, actor: Actor, record: ProfileCertification, why: str = "revoked"
) -> ProfileCertification:
    """End a certification (`why`: revoked, or expired), then re-evaluate every live
    binding whose workload verdict relied on it; those no longer allowed are flagged."""
    with system_scope():
        updated = ProfileCertification.objects.filter(pk=record.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if updated:
            audit_record(
                actor=actor,
                action=f"profile.{'expire' if why == 'expired' else 'revoke'}_certification",
                instance=record.profile,
                changes={"certified_for": [record.workload_class, None]},
            )
        record.refresh_from_db()
    if updated:
        reevaluate_workload(certification=record)
    return record
