"""What every set-up installs for eventing (apps.core.setup): the subscriptions of
Steward's own consumers, their consumer groups while Redis answers, and eventing's
periodic jobs."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.core.setup import Schedule, install_periodic_tasks
from apps.eventing.services import ensure_subscription_groups, sync_consumer_subscriptions

SCHEDULES = [
    # The dispatcher is kicked on commit; this sweep only catches lost kicks and lanes
    # whose back-off has passed, so a few seconds is plenty.
    Schedule("eventing.periodic_sweep_outbox", 5, IntervalSchedule.SECONDS),
    Schedule("eventing.periodic_reconcile_effects", 30, IntervalSchedule.SECONDS),
    Schedule("eventing.periodic_trim_streams", 1, IntervalSchedule.MINUTES),
    Schedule("eventing.periodic_sample_lag", 1, IntervalSchedule.MINUTES),
    Schedule("eventing.periodic_redeliver_replays", 30, IntervalSchedule.SECONDS),
]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)


def install_consumers(report) -> None:
    subscriptions = sync_consumer_subscriptions()
    try:
        ensure_subscription_groups(subscriptions)
    except Exception as exc:  # noqa: BLE001 - run_consumers creates them too, when Redis is back
        report.created.append(f"(consumer groups not created yet: {exc})")
