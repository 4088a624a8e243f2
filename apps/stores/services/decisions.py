"""Operator decisions on flagged bindings, and the checks that flag or clear them again:
a residency exception until it expires, workload verdicts evaluated again when the
evidence they rest on changes."""

from __future__ import annotations

from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.stores import selectors
from apps.stores.codes import StoreCode
from apps.stores.models import ProfileCertification, StoreBinding
from apps.stores.services.bindings import _event, _note
from apps.stores.services.rules import flag_violations
from apps.tenancy.audit import audit_record

Status = StoreBinding.Status


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
            "An exception needs a reason.", code=CoreCode.REASON_REQUIRED, field="reason"
        )
    if expires_at is None or expires_at <= timezone.now():
        raise ValidationFailed(
            "An exception needs an expiry in the future.",
            code=CoreCode.INVALID_EXPIRY,
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
