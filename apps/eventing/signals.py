"""What eventing does when the registry, beneath it, announces a change (after commit;
see apps.registry.signals). Connected in EventingConfig.ready."""

from __future__ import annotations

from django.dispatch import receiver

from apps.core.enqueue import send_task
from apps.core.redis import get_redis
from apps.eventing.consumers import ensure_group, ensure_subscription_groups
from apps.eventing.transports import stream_key
from apps.registry.news import is_news_topic
from apps.registry.signals import subscription_created, topics_created


@receiver(topics_created, dispatch_uid="eventing.subscribe_stewards_consumers")
def subscribe_stewards_consumers(sender, names, **kwargs) -> None:
    """Steward's catch-all consumers follow a new topic soon, not at the consumers
    process's next refresh, through a task: the request that made the topic (a
    Schema Registry client auto-registering a new subject) does not wait for the
    subscriptions and their audit rows. No event can go by unseen meanwhile: the
    dispatcher makes Steward's consumer groups on a stream before its first entry
    (RedisStreamTransport._steward_groups), and should the task be lost, the consumers
    process subscribes every topic at its next refresh. Only the new topics are looked
    at: registering a thousand new subjects must not cost a walk over every topic each."""
    send_task("eventing.follow_new_topics", names=list(names))


@receiver(subscription_created, dispatch_uid="eventing.make_subscription_group")
def make_subscription_group(sender, subscription, **kwargs) -> None:
    """The group starts at the stream's end: the subscription receives what comes next.

    Except on a consumer's news topic (apps.registry.news), where it starts at the
    stream's beginning. The registry creates a consumer's news subscription in the same
    transaction as the first news addressed to it, and the dispatcher, kicked by the
    same commit, may add that news to the stream before this runs; a group starting at
    the end would never see it. Everything on that stream is addressed to the one
    consumer and is written only while it has a subscription to receive it, so reading
    from the beginning delivers nothing that is not its own.
    """
    topic = subscription.topic.name
    if is_news_topic(topic):
        ensure_group(get_redis(), stream_key(topic), subscription.group_name, start="0")
    else:
        ensure_subscription_groups([subscription])
