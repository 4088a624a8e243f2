"""What every set-up installs for eventing (apps.core.setup): the subscriptions of
Steward's own consumers, and their consumer groups while Redis answers."""

from __future__ import annotations

from apps.eventing.consumers import ensure_subscription_groups, sync_consumer_subscriptions


def install_consumers(report) -> None:
    subscriptions = sync_consumer_subscriptions()
    try:
        ensure_subscription_groups(subscriptions)
    except Exception as exc:  # noqa: BLE001 - run_consumers creates them too, when Redis is back
        report.created.append(f"(consumer groups not created yet: {exc})")
