"""Uncertain effects: calls to other systems whose outcome may be unknown.

A service module of eventing's (see apps.eventing.services): every write of an
`UncertainEffect` is here, each move along its table through `TRANSITIONS.move`.

A handler or service that calls outside records the call first (`perform_effect`),
in its own transaction, under an external reference the other side can be asked
about (an idempotency key). If the call answers, the record is settled. If it times
out, the record is marked *uncertain* and the caller carries on; the reconciler
(`reconcile_due`, a periodic task) later asks the other side through the target
system's adapter and settles it, backing off between checks.

Reconciliation is bounded: after `STEWARD_EFFECT_MAX_CHECKS` checks, or
`STEWARD_EFFECT_MAX_AGE_SECONDS` since it began, an effect the other side still does
not know leaves reconciliation. An adapter may first act on that (`at_limit`: the
workflow start, for one, is sent again under the same key); otherwise the effect is
escalated (`escalated_at`, `UncertainEffectEscalated`) and waits on a person, who
settles it by hand (`effect_settle`) or gives it another round (`effect_retry_now`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, InvalidTransition, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope
from apps.eventing.codes import EventingCode
from apps.eventing.models import UncertainEffect
from apps.eventing.services import backoff_seconds
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)
RECONCILE_BATCH = 100


class OutcomeUnknown(Exception):
    """The call may or may not have taken effect (a timeout, a dropped connection)."""


UNKNOWN = "unknown"


@dataclass(frozen=True)
class Outcome:
    state: str  # UncertainEffect.State.SUCCEEDED / FAILED, or "unknown" (ask again later)
    result: dict = field(default_factory=dict)
    error: str = ""  # why it failed, for a FAILED outcome


class EffectAdapter(Protocol):
    """Asks the other side about an uncertain call. May also define:

    - `settled(effect)`, called once the reconciler or a person has settled one
      (succeeded or failed: `effect.state` says which), in the settling transaction;
    - `at_limit(effect) -> Outcome`, asked once the effect reached its reconciliation
      limit still unknown, before it is escalated (an outcome that settles it keeps
      it from escalating);
    - `reference_result(reference) -> dict`, the result a person's "done, and this is
      the other side's reference" stands for (ValidationFailed if it cannot be one);
    - `topic`, the topic its escalations are announced on.
    """

    def check(self, effect: UncertainEffect) -> Outcome: ...


ADAPTERS: dict[str, EffectAdapter] = {}


def register_adapter(target_system: str, adapter: EffectAdapter) -> None:
    ADAPTERS[target_system] = adapter


def perform_effect(
    *,
    tenant_id,
    actor: str,
    target_system: str,
    operation: str,
    external_ref: str,
    call: Callable[[], dict],
    event_id=None,
) -> UncertainEffect:
    """Record, then make, a call to another system; returns the settled (or uncertain) record.

    `call` returns a JSON-able result, raises OutcomeUnknown (or an httpx timeout) when
    the outcome is unknown, and raises anything else for a definite failure. Calling
    again with the same reference returns the existing record instead of calling twice.
    """
    with owner_scope(tenant_id):
        effect, created = UncertainEffect.objects.get_or_create(
            target_system=target_system,
            operation=operation,
            external_ref=external_ref,
            defaults={"tenant_id": tenant_id, "actor": actor, "event_id": event_id},
        )
    if not created and effect.state != UncertainEffect.State.PENDING:
        return effect
    try:
        result = call()
    except (OutcomeUnknown, httpx.TimeoutException) as exc:
        return _mark(effect, UncertainEffect.State.UNCERTAIN, error=str(exc) or "timed out")
    except Exception as exc:  # noqa: BLE001 - a definite answer: the call failed
        return _mark(effect, UncertainEffect.State.FAILED, error=f"{type(exc).__name__}: {exc}")
    return _mark(effect, UncertainEffect.State.SUCCEEDED, result=result)


def _mark(
    effect: UncertainEffect, state: str, *, result=None, error: str = "", checked: bool = False
) -> UncertainEffect:
    """Move the effect along its table (another check of an uncertain one included) and
    schedule its next check while it stays uncertain."""
    config = settings.STEWARD_EVENTING
    attempts = effect.attempts + 1
    changes = {
        "attempts": attempts,
        "checks": effect.checks + 1 if checked else effect.checks,
        "last_error": error[:500],
        "next_check_at": None,
        "updated_at": timezone.now(),
    }
    if result is not None:
        changes["result"] = result
    if state == UncertainEffect.State.UNCERTAIN:
        delay = backoff_seconds(
            attempts, base=config["BACKOFF_BASE_SECONDS"], cap=config["BACKOFF_MAX_SECONDS"]
        )
        changes["next_check_at"] = timezone.now() + timedelta(seconds=delay)
    with owner_scope(effect.tenant_id), transaction.atomic():
        return UncertainEffect.TRANSITIONS.move(effect, state, **changes)


def past_limit(effect: UncertainEffect, *, now=None) -> bool:
    """Whether the effect has had its checks, or its time, since reconciliation began."""
    now = now or timezone.now()
    age = (now - effect.reconcile_since).total_seconds()
    return (
        effect.checks >= settings.STEWARD_EFFECT_MAX_CHECKS
        or age >= settings.STEWARD_EFFECT_MAX_AGE_SECONDS
    )


def _settled(effect: UncertainEffect, adapter) -> None:
    """Let the adapter act on a settled effect. Outside the effect's scope: adapters
    look their objects up in scopes of their own, which may not be narrower."""
    if adapter is not None and hasattr(adapter, "settled"):
        adapter.settled(effect)


def _reaches_limit(effect: UncertainEffect) -> bool:
    """Whether this check, unanswered, is the effect's last."""
    return effect.checks + 1 >= settings.STEWARD_EFFECT_MAX_CHECKS or past_limit(effect)


def _escalate(effect: UncertainEffect, adapter, error: str) -> UncertainEffect:
    """Take the effect out of reconciliation: it waits on a person now."""
    now = timezone.now()
    with owner_scope(effect.tenant_id), transaction.atomic():
        # Still uncertain, out of the reconciler's hands.
        UncertainEffect.TRANSITIONS.move(
            effect,
            UncertainEffect.State.UNCERTAIN,
            checks=effect.checks + 1,
            last_error=error[:500],
            next_check_at=None,
            escalated_at=now,
            updated_at=now,
        )
        audit_record(
            actor=None,
            action="effect.escalated",
            instance=effect,
            tenant=effect.tenant_id,
            changes={"escalated_at": [None, now.isoformat()], "checks": [None, effect.checks]},
        )
        topic = getattr(adapter, "topic", None)
        if topic:
            emit(
                topic=topic,
                event_type="UncertainEffectEscalated",
                aggregate_type="uncertain_effect",
                aggregate_id=str(effect.pk),
                tenant=effect.tenant_id,
                payload=_effect_payload(effect),
            )
        else:
            logger.warning("effect %s escalated; %s names no topic", effect.pk, adapter)
    logger.warning("uncertain effect %s left reconciliation: it waits on a person", effect)
    return effect


def _effect_payload(effect: UncertainEffect) -> dict:
    return {
        "effect_id": effect.pk,
        "target_system": effect.target_system,
        "operation": effect.operation,
        "external_ref": effect.external_ref,
        "checks": effect.checks,
        "attempts": effect.attempts,
        "last_error": effect.last_error,
    }


def _ask(call, effect) -> Outcome:
    try:
        return call(effect)
    except Exception as exc:  # noqa: BLE001 - the other side is still unreachable
        return Outcome(UNKNOWN, error=f"check failed: {exc}")


SETTLES = (UncertainEffect.State.SUCCEEDED, UncertainEffect.State.FAILED)


def reconcile_due(limit: int = RECONCILE_BATCH) -> int:
    """Ask the other side about uncertain effects whose next check is due; the number
    settled. An effect still unknown at its limit is escalated (see the module)."""
    with system_scope():
        due = list(
            UncertainEffect.objects.filter(
                state=UncertainEffect.State.UNCERTAIN, next_check_at__lte=timezone.now()
            ).order_by("next_check_at")[:limit]
        )
    return sum(_reconcile(effect) for effect in due)


def _reconcile(effect: UncertainEffect) -> int:
    """Ask about one due effect and act on the answer; 1 when that settled it."""
    adapter = ADAPTERS.get(effect.target_system)
    if adapter is None:
        logger.error("no reconciliation adapter for %s", effect.target_system)
        outcome = Outcome(UNKNOWN, error="no adapter for this system")
    else:
        outcome = _ask(adapter.check, effect)
    last = _reaches_limit(effect)
    if outcome.state not in SETTLES and last and hasattr(adapter, "at_limit"):
        outcome = _ask(adapter.at_limit, effect)
    try:
        if outcome.state in SETTLES:
            effect = _mark(
                effect, outcome.state, result=outcome.result, error=outcome.error, checked=True
            )
        elif last:
            _escalate(effect, adapter, outcome.error or "the other side does not know it")
        else:
            _mark(
                effect,
                UncertainEffect.State.UNCERTAIN,
                error=outcome.error or "the other side does not know yet",
                checked=True,
            )
    except InvalidTransition as moved:
        # A person settled it while the other side was asked: theirs stands.
        logger.info("effect %s was settled meanwhile: %s", effect.pk, moved.detail)
        return 0
    if outcome.state not in SETTLES:
        return 0
    _settled(effect, adapter)
    return 1


# --------------------------------------------------------------------------- by a person


def _settled_already(state: str) -> str:
    return f"The effect is {state} already."


def _locked_effect(effect: UncertainEffect) -> UncertainEffect:
    """The effect, locked until the transaction ends, if it is uncertain: a person acts
    on nothing else (the table would let a pending one settle, but that call is still
    out), and what they act on must not move under them (escalated or not)."""
    locked = UncertainEffect.objects.select_for_update().get(pk=effect.pk)
    if locked.state != UncertainEffect.State.UNCERTAIN:
        raise Conflict(
            _settled_already(locked.state),
            code=EventingCode.EFFECT_ALREADY_SETTLED,
            state=locked.state,
        )
    return locked


def effect_settle(
    *,
    effect: UncertainEffect,
    actor: Actor,
    done: bool,
    reason: str,
    reference: str = "",
) -> UncertainEffect:
    """A person settles an uncertain effect: done (with the other side's reference for
    it, e.g. the instance it created) or not done, with a reason. The adapter acts on it
    as on a settlement by the reconciler, in the same transaction."""
    reason, reference = (reason or "").strip(), (reference or "").strip()
    if not reason:
        raise ValidationFailed("Say why the effect is settled so.", code=CoreCode.REASON_REQUIRED)
    if done and not reference:
        raise ValidationFailed(
            "Name the other side's reference for what was done.",
            code=EventingCode.REFERENCE_REQUIRED,
        )
    adapter = ADAPTERS.get(effect.target_system)
    # One transaction around the adapter's act too, so that its refusal (or failure)
    # leaves the effect as it was.
    with transaction.atomic():
        locked = _settle_by_hand(
            effect, adapter, actor=actor, done=done, reason=reason, reference=reference
        )
        _settled(locked, adapter)
    return locked


def _settle_by_hand(effect, adapter, *, actor, done, reason, reference) -> UncertainEffect:
    with owner_scope(effect.tenant_id), transaction.atomic():
        locked = _locked_effect(effect)
        if done:
            convert = getattr(adapter, "reference_result", None)
            result = convert(reference) if convert else {"reference": reference}
            result = {**result, "settled_by_hand": True}
            state, error = UncertainEffect.State.SUCCEEDED, ""
        else:
            result, state, error = locked.result, UncertainEffect.State.FAILED, reason
        before = locked.state
        UncertainEffect.TRANSITIONS.move(
            locked,
            state,
            detail=_settled_already,
            code=EventingCode.EFFECT_ALREADY_SETTLED,
            result=result,
            last_error=error[:500],
            next_check_at=None,
            updated_at=timezone.now(),
        )
        audit_record(
            actor=actor,
            action="effect.settle",
            instance=locked,
            tenant=locked.tenant_id,
            changes={
                "state": [before, state],
                "reference": [None, reference or None],
                "reason": [None, reason],
            },
        )
    return locked


def effect_retry_now(*, effect: UncertainEffect, actor: Actor) -> UncertainEffect:
    """Give an escalated effect a fresh round of reconciliation, starting now."""
    with owner_scope(effect.tenant_id), transaction.atomic():
        locked = _locked_effect(effect)
        if locked.escalated_at is None:
            raise Conflict(
                "The effect is still being reconciled; it waits on no one.",
                code=EventingCode.EFFECT_NOT_ESCALATED,
            )
        now = timezone.now()
        escalated = locked.escalated_at
        # Uncertain still, back in the reconciler's hands.
        UncertainEffect.TRANSITIONS.move(
            locked,
            UncertainEffect.State.UNCERTAIN,
            detail=_settled_already,
            code=EventingCode.EFFECT_ALREADY_SETTLED,
            escalated_at=None,
            checks=0,
            reconcile_since=now,
            next_check_at=now,
            updated_at=now,
        )
        audit_record(
            actor=actor,
            action="effect.retry",
            instance=locked,
            tenant=locked.tenant_id,
            changes={"escalated_at": [escalated.isoformat(), None], "checks": [None, 0]},
        )
        enqueue_on_commit("eventing.periodic_reconcile_effects")
    return locked
