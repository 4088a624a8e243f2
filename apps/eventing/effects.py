"""Uncertain effects: calls to other systems whose outcome may be unknown.

A handler or service that calls outside records the call first (`perform_effect`),
in its own transaction, under an external reference the other side can be asked
about (an idempotency key). If the call answers, the record is settled. If it times
out, the record is marked *uncertain* and the caller carries on; the reconciler
(`reconcile_due`, a periodic task) later asks the other side through the target
system's adapter and settles it, backing off between checks.
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

from apps.core.scope import owner_scope, system_scope
from apps.eventing.models import UncertainEffect
from apps.eventing.services import backoff_seconds

logger = logging.getLogger(__name__)
RECONCILE_BATCH = 100


class OutcomeUnknown(Exception):
    """The call may or may not have taken effect (a timeout, a dropped connection)."""


@dataclass(frozen=True)
class Outcome:
    state: str  # UncertainEffect.State.SUCCEEDED / FAILED, or "unknown" (ask again later)
    result: dict = field(default_factory=dict)


class EffectAdapter(Protocol):
    """Asks the other side about an uncertain call. May also define
    `settled(effect)`, called once the reconciler has settled one (succeeded or
    failed: `effect.state` says which)."""

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


def _mark(effect: UncertainEffect, state: str, *, result=None, error: str = "") -> UncertainEffect:
    """Move the effect along its table (another check of an uncertain one included) and
    schedule its next check while it stays uncertain."""
    config = settings.STEWARD_EVENTING
    UncertainEffect.TRANSITIONS.check(effect.state, state)
    effect.state = state
    effect.attempts += 1
    effect.last_error = error[:500]
    if result is not None:
        effect.result = result
    effect.next_check_at = None
    if state == UncertainEffect.State.UNCERTAIN:
        delay = backoff_seconds(
            effect.attempts, base=config["BACKOFF_BASE_SECONDS"], cap=config["BACKOFF_MAX_SECONDS"]
        )
        effect.next_check_at = timezone.now() + timedelta(seconds=delay)
    with owner_scope(effect.tenant_id), transaction.atomic():
        effect.save(
            update_fields=[
                "state",
                "attempts",
                "last_error",
                "result",
                "next_check_at",
                "updated_at",
            ]
        )
    return effect


def reconcile_due(limit: int = RECONCILE_BATCH) -> int:
    """Ask the other side about uncertain effects whose next check is due; the number settled."""
    with system_scope():
        due = list(
            UncertainEffect.objects.filter(
                state=UncertainEffect.State.UNCERTAIN, next_check_at__lte=timezone.now()
            ).order_by("next_check_at")[:limit]
        )
    settled = 0
    for effect in due:
        adapter = ADAPTERS.get(effect.target_system)
        if adapter is None:
            logger.error("no reconciliation adapter for %s", effect.target_system)
            _mark(effect, UncertainEffect.State.UNCERTAIN, error="no adapter for this system")
            continue
        try:
            outcome = adapter.check(effect)
        except Exception as exc:  # noqa: BLE001 - the other side is still unreachable
            _mark(effect, UncertainEffect.State.UNCERTAIN, error=f"check failed: {exc}")
            continue
        if outcome.state in (UncertainEffect.State.SUCCEEDED, UncertainEffect.State.FAILED):
            effect = _mark(effect, outcome.state, result=outcome.result)
            settled += 1
            if hasattr(adapter, "settled"):
                adapter.settled(effect)
        else:
            _mark(effect, UncertainEffect.State.UNCERTAIN, error="the other side does not know yet")
    return settled
