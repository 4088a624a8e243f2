"""What eventing does when the registry, beneath it, announces a change (after commit;
see apps.registry.signals). Connected in EventingConfig.ready."""

from __future__ import annotations

from django.dispatch import receiver

from apps.eventing.consumers import ensure_subscription_groups, sync_consumer_subscriptions
from apps.registry.signals import subscription_created, topics_created


@receiver(topics_created, dispatch_uid="eventing.subscribe_stewards_consumers")
def subscribe_stewards_consumers(sender, names, **kwargs) -> None:
    """Steward's catch-all consumers follow a new topic at once, not at the consumers
    process's next refresh: their groups start at the stream's end, so a group made
    after the topic's first events were dispatched would never see them. Only the new
    topics are looked at: registering a thousand new subjects must not cost a walk
    over every topic each."""
    ensure_subscription_groups(sync_consumer_subscriptions(topic_names=names))


@receiver(subscription_created, dispatch_uid="eventing.make_subscription_group")
def make_subscription_group(sender, subscription, **kwargs) -> None:
    """The group starts at the stream's end: the subscription receives what comes next."""
    ensure_subscription_groups([subscription])
