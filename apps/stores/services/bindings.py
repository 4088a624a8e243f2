"""A binding's lifecycle, from SetStoreBinding to the owner's receipt that its data is gone.

Every status change is a move along StoreBinding.TRANSITIONS (one conditional UPDATE), a
history row and a StoreBindingChanged event; `_event`, `_history` and `_note` are shared
with the other services modules of stores.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.eventing.effects import perform_effect
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, selectors
from apps.stores.codes import StoreCode
from apps.stores.models import LIVE_STATUSES, StoreBinding, StoreBindingChange
from apps.tenancy.audit import audit_record
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import Tenant

Status = StoreBinding.Status
TOPIC = "stores.binding"
logger = logging.getLogger(__name__)

# A tenant in these states takes no new store bindings or data: a deletion order is
# erasing it (or has), and what is written now its phases would never reach.
LEAVING = {
    Tenant.Status.OFFBOARDING: TenancyCode.TENANT_OFFBOARDING,
    Tenant.Status.DELETED: TenancyCode.TENANT_DELETED,
}
# The flag a refusal of provisioning sets on a Requested binding, by its code.
FLAGS = {
    StoreCode.RESIDENCY_VIOLATION: "violation",
    StoreCode.WORKLOAD_NOT_ALLOWED: "workload_violation",
}


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


def tenant_refusal(tenant_id, *, lock: bool = False) -> Conflict | None:
    """Why the tenant takes no new data through stores (it is offboarding or deleted:
    `tenant_offboarding`, `tenant_deleted`), or None. With `lock`, the tenant row stays
    locked until the caller's transaction ends, so a deletion order cannot take the
    tenant offboarding between this check and the caller's write unseen: its update
    waits, and its phases then see what was written."""
    tenants = Tenant.objects.filter(pk=tenant_id)
    if lock:
        tenants = tenants.select_for_update(no_key=True)
    status = tenants.values_list("status", flat=True).first()
    if status not in LEAVING:
        return None
    return Conflict(
        f"The tenant is {status}: its data is being erased, so it takes no new store "
        "bindings or data.",
        code=LEAVING[status],
        tenant_status=status,
    )


def binding_set(*, actor: Actor, tenant, store, profile, region) -> StoreBinding:
    """SetStoreBinding. The live binding of the same store, profile and region is
    answered as it is (the request is a repeat); one that differs is a conflict. An
    offboarding or deleted tenant is refused (`tenant_offboarding`, `tenant_deleted`)."""
    with tenant_scope(tenant):
        refusal = tenant_refusal(tenant.pk, lock=True)
        if refusal is not None:
            raise refusal
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
    attempt = _issue_attempt(binding.pk)
    refusal = _noncompliance(binding)
    if refusal is not None:
        _record_refused_provisioning(binding, refusal)
        if attempt:  # a revocation that failed when the call was settled goes again
            _revoke_unrecorded(binding)
        return "refused"

    def issue() -> dict:
        key, connection = brokers.get_broker().issue_credentials(binding)
        return {"key_reference": key, "connection_reference": connection}

    effect = perform_effect(
        tenant_id=binding.tenant_id,
        actor="stores",
        target_system=brokers.TARGET,
        operation=brokers.ISSUE,
        external_ref=brokers.issue_key(binding.pk, attempt),
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


def _issue_attempt(binding_id) -> int:
    """How many of the binding's issue calls settled with credentials that were never
    recorded (the binding was refused when the call settled, and they were revoked):
    the next call is a new one, not the settled one answered again."""
    with system_scope():
        return UncertainEffect.objects.filter(
            Q(external_ref=str(binding_id)) | Q(external_ref__startswith=f"{binding_id}/"),
            target_system=brokers.TARGET,
            operation=brokers.ISSUE,
            state=UncertainEffect.State.SUCCEEDED,
        ).count()


def binding_record_credentials(effect) -> None:
    """Settle a binding from its settled issue call (answered at once, or reconciled
    after a timeout). A failed call fails a Requested binding with the broker's error.
    Issued credentials are recorded (Provisioned, announced) only on a binding still
    Requested that the tenant's status, the residency rules and the workload evidence in
    force allow now, checked under the binding's lock; otherwise (flagged, retired, or
    its tenant offboarding while the call was out) the broker revokes them: never
    recorded, never announced."""
    with system_scope():
        binding = (
            StoreBinding.objects.select_related("store", "profile", "region", "tenant")
            .filter(pk=brokers.binding_of(effect.external_ref))
            .first()
        )
    if binding is None:
        return
    if effect.state != effect.State.SUCCEEDED:
        if binding.status == Status.REQUESTED:
            error = effect.last_error or effect.result.get("error", "the broker refused")
            _transition(
                binding,
                Status.FAILED,
                reason=f"The secret broker did not issue credentials: {error}",
                actor_label="secret-broker",
            )
        return
    if not _record_if_allowed(binding, effect.result):
        _revoke_unrecorded(binding, effect.result)


def _record_if_allowed(binding: StoreBinding, issued: dict) -> bool:
    """Provisioned with the issued references, if the binding may have them now."""
    with owner_scope(binding.tenant_id):
        # Locked: a retirement or a flag waits until this is decided, and sees it.
        StoreBinding.objects.select_for_update().filter(pk=binding.pk).values_list("pk").first()
        binding.refresh_from_db()
        if binding.status in (Status.PROVISIONED, Status.ACTIVE):
            return True  # this call's credentials are the ones recorded already
        if binding.status != Status.REQUESTED:
            _note(
                binding,
                "Credentials issued after provisioning was cancelled are revoked.",
                "secret-broker",
            )
            return False
        refusal = _noncompliance(binding)
        if refusal is not None:
            _record_refused_provisioning(binding, refusal)
            _note(
                binding,
                f"Credentials issued while the call was out are revoked: {refusal.detail}",
                "secret-broker",
            )
            return False
        _transition(
            binding,
            Status.PROVISIONED,
            reason="Credentials issued; waiting for provisioning to apply the migrations.",
            actor_label="secret-broker",
            key_reference=issued["key_reference"],
            connection_reference=issued["connection_reference"],
        )
    return True


def _revoke_held(binding: StoreBinding, issued: dict | None = None) -> None:
    """Revoke every credential of the binding: those recorded on it, those an issue call
    answered with (`issued`), and any the broker says it holds (a call cancelled or
    refused while it was out). Revoking twice is harmless; a broker's failure raises."""
    broker = brokers.get_broker()
    issued = issued or {}
    references = {
        binding.key_reference,
        binding.connection_reference,
        issued.get("key_reference", ""),
        issued.get("connection_reference", ""),
        *(broker.find(str(binding.pk)) or ()),
    }
    for reference in sorted(filter(None, references)):
        broker.revoke(reference)


def _revoke_unrecorded(binding: StoreBinding, issued: dict | None = None) -> None:
    """Revoke credentials a binding may not have. A broker's failure is logged: the
    minute sweep tries a Requested binding again (binding_provision), a Retiring one is
    revoked by binding_revoke."""
    try:
        _revoke_held(binding, issued)
    except Exception as exc:  # noqa: BLE001 - retried by the sweep, explained in the log
        logger.warning("revoking unrecorded credentials of binding %s failed: %s", binding.pk, exc)


def _noncompliance(binding: StoreBinding) -> Conflict | None:
    """Why the tenant's status, the rules and the evidence in force do not allow the
    binding now, as the refusal the API answers with; None when they allow it."""
    # The binding's tenant's scope sees exactly the rules that apply to it.
    with tenant_scope(binding.tenant_id):
        leaving = tenant_refusal(binding.tenant_id)
        if leaving is not None:
            return leaving
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
    flag = FLAGS.get(refusal.code)
    with tenant_scope(binding.tenant_id):
        current = StoreBinding.objects.filter(pk=binding.pk, status=Status.REQUESTED)
        if flag is None:
            # The tenant is leaving: nothing for an operator to decide; the deletion
            # order retires the binding.
            current.exclude(status_reason=reason).update(status_reason=reason)
            return
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
    """Provisioned or Active → Retiring, then a worker revokes the credentials. A
    Requested binding (flagged, or its tenant being deleted) retires too: its
    provisioning is cancelled, and credentials issued by a call still out are revoked
    when it settles (binding_record_credentials)."""
    if not reason:
        reason = (
            "Retired before it was provisioned; provisioning is cancelled."
            if binding.status == Status.REQUESTED
            else "Retirement requested; revoking the credentials."
        )
    binding = _transition(binding, Status.RETIRING, reason=reason, actor_label=actor.label)
    enqueue_on_commit("stores.revoke_binding", binding_id=str(binding.pk))
    return binding


def binding_revoke(*, binding_id) -> str:
    """Revoke a retiring binding's credentials at the broker, then mark it Retired."""
    with system_scope():
        binding = StoreBinding.objects.filter(pk=binding_id, status=Status.RETIRING).first()
    if binding is None:
        return "nothing to do"
    try:
        _revoke_held(binding)
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
        reconciling = {
            brokers.binding_of(key)
            for key in UncertainEffect.objects.filter(
                target_system=brokers.TARGET, state=UncertainEffect.State.UNCERTAIN
            ).values_list("external_ref", flat=True)
        }
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
