"""Workload evidence (benchmarks, contract tests, physicalization policies) and profile
certifications. Recording evidence, or a certification ending, evaluates again the live
bindings whose workload verdict may rest on it."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope
from apps.stores import gating
from apps.stores.codes import StoreCode
from apps.stores.models import (
    BenchmarkResult,
    ContractTestResult,
    MigrationPilot,
    PhysicalizationPolicy,
    ProfileCertification,
)
from apps.stores.services.decisions import (
    expire_exceptions,
    reevaluate_bindings,
    reevaluate_workload,
)
from apps.tenancy.audit import audit_record


def _require_run(run_reference: str) -> None:
    if not (run_reference or "").strip():
        raise ValidationFailed(
            "Evidence names the run it came from.",
            code=StoreCode.RUN_REQUIRED,
            field="run_reference",
        )


def _record_evidence(
    actor: Actor, record, action: str, changes: dict, *, verdicts: bool = True, **reevaluate
):
    """Save an evidence record and audit it (platform rows: the system scope), then
    re-evaluate the live bindings whose verdict it may change (none, without `verdicts`:
    the record feeds the migration checklist only)."""
    record.recorded_by = actor.label[:150]
    with system_scope():
        record.full_clean()
        record.save()
        audit_record(actor=actor, action=action, instance=record, changes=changes)
    if verdicts:
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


def pilot_record(
    *,
    actor: Actor,
    store,
    profile,
    outcome: str,
    run_reference: str,
    started_at=None,
    ended_at=None,
    notes: str = "",
) -> MigrationPilot:
    """Step 6 of the migration strategy: a pilot of one non-critical runtime-adjacent
    store (a workflow instance / query surface) on `profile`, and how it went. A
    concluded pilot ends now unless told when; a running one has no end yet."""
    _require_run(run_reference)
    if store.workload_class not in gating.RUNTIME_ADJACENT:
        raise ValidationFailed(
            f"{store.slug} is {store.get_workload_class_display()}: a pilot is of a "
            "non-critical runtime-adjacent store (workflow instances / query surfaces).",
            code=StoreCode.PILOT_NOT_RUNTIME_ADJACENT,
            field="store",
        )
    started_at = started_at or timezone.now()
    if outcome != MigrationPilot.Outcome.RUNNING:
        ended_at = ended_at or timezone.now()
    if (outcome == MigrationPilot.Outcome.RUNNING and ended_at is not None) or (
        ended_at is not None and ended_at < started_at
    ):
        raise ValidationFailed(
            "A pilot ends after it starts, and a running one has not ended.",
            code=StoreCode.INVALID_PILOT_PERIOD,
            field="ended_at",
        )
    record = MigrationPilot(
        store=store,
        profile=profile,
        outcome=outcome,
        started_at=started_at,
        ended_at=ended_at,
        notes=notes,
        run_reference=run_reference,
    )
    return _record_evidence(
        actor,
        record,
        "workload_evidence.pilot",
        {
            "pilot": [None, f"{store.slug} on {profile.slug}"],
            "outcome": [None, outcome],
            "run_reference": [None, run_reference],
        },
        verdicts=False,
    )


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
            code=CoreCode.INVALID_EXPIRY,
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
