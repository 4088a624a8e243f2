"""Thin Celery tasks: each calls one of eventing's services (apps.eventing.services,
dispatcher, effects): the dispatcher, the reconciler, stream trimming, dead-letter
replays, new topics' subscriptions and the minute's lag sample."""

from __future__ import annotations

from celery import shared_task

from apps.core.jobs import periodic_job
from apps.eventing import dispatcher, effects, services


@shared_task(scope="self", name="eventing.dispatch_outbox", acks_late=False)
def dispatch_outbox() -> int:
    """Drain the outbox; kicked on commit. Not acknowledged late: a lost run is
    harmless, beat's sweep starts another, and redelivering kicks is pointless."""
    return dispatcher.dispatch_kicked()


@shared_task(scope="self", name="eventing.periodic_sweep_outbox")
def periodic_sweep_outbox() -> int:
    return dispatcher.dispatch_sweep()


@shared_task(scope="self", name="eventing.periodic_reconcile_effects")
@periodic_job("eventing.reconcile_effects")
def periodic_reconcile_effects() -> int:
    return effects.reconcile_due()


@shared_task(scope="self", name="eventing.replay_dead_letter")
def replay_dead_letter(*, dead_letter_id: int) -> str:
    return services.dead_letter_redeliver(dead_letter_id=dead_letter_id)


@shared_task(scope="self", name="eventing.periodic_trim_streams")
@periodic_job("eventing.trim_streams")
def periodic_trim_streams() -> dict:
    return services.streams_trim()


@shared_task(scope="self", name="eventing.periodic_redeliver_replays")
@periodic_job("eventing.redeliver_replays")
def periodic_redeliver_replays() -> int:
    return services.dead_letters_redeliver_queued()


@shared_task(scope="self", name="eventing.follow_new_topics")
def follow_new_topics(*, names: list[str]) -> int:
    return services.follow_new_topics(names=names)


@shared_task(scope="self", name="eventing.periodic_sample_lag")
def periodic_sample_lag() -> int:
    """Every minute: the eventing page's lag over time. Overlapping runs write the same
    minute's hash, so no claim is needed."""
    return services.lag_sample_record()
