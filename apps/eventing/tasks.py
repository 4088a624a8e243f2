"""Thin Celery tasks around the dispatcher, the inbox sweep, the reconciler, stream
trimming, dead-letter replays and the minute's lag sample."""

from __future__ import annotations

from celery import shared_task

from apps.core.jobs import periodic_job
from apps.core.kick import clear_kick
from apps.eventing import consumers, dispatcher, effects, lag, streams
from apps.eventing.services import KICK_KEY
from apps.eventing.signals import send_follow_task


@shared_task(scope="self", name="eventing.dispatch_outbox", acks_late=False)
def dispatch_outbox() -> int:
    """Drain the outbox; kicked on commit. Not acknowledged late: a lost run is
    harmless, beat's sweep starts another, and redelivering kicks is pointless."""
    # Clear the kick flag before looking at the outbox: a commit after this point
    # kicks again, so no event waits for the sweep.
    clear_kick(KICK_KEY)
    # New topics' names ride on the kick their commit sent (apps.eventing.signals).
    send_follow_task()
    return dispatcher.drain()


@shared_task(scope="self", name="eventing.periodic_sweep_outbox")
def periodic_sweep_outbox() -> int:
    """Beat's safety net for lost kicks and backed-off lanes. Several may overlap:
    lanes are leased, so they share the work instead of repeating it."""
    send_follow_task()
    return dispatcher.drain()


@shared_task(scope="self", name="eventing.periodic_reconcile_effects")
@periodic_job("eventing.reconcile_effects")
def periodic_reconcile_effects() -> int:
    return effects.reconcile_due()


@shared_task(scope="self", name="eventing.replay_dead_letter")
def replay_dead_letter(*, dead_letter_id: int) -> str:
    return consumers.redeliver(dead_letter_id)


@shared_task(scope="self", name="eventing.periodic_trim_streams")
@periodic_job("eventing.trim_streams")
def periodic_trim_streams() -> dict:
    return streams.trim_streams()


@shared_task(scope="self", name="eventing.periodic_redeliver_replays")
@periodic_job("eventing.redeliver_replays")
def periodic_redeliver_replays() -> int:
    return consumers.redeliver_queued()


@shared_task(scope="self", name="eventing.follow_new_topics")
def follow_new_topics(*, names: list[str]) -> int:
    return consumers.follow_new_topics(names)


@shared_task(scope="self", name="eventing.periodic_sample_lag")
def periodic_sample_lag() -> int:
    """Every minute: the eventing page's lag over time. Overlapping runs write the same
    minute's hash, so no claim is needed."""
    return lag.lag_sample_record()
