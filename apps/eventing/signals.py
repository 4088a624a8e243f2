"""What eventing does when the registry, beneath it, announces a change (after commit;
see apps.registry.signals). Connected in EventingConfig.ready."""

from __future__ import annotations

import logging

from django.conf import settings
from django.dispatch import receiver

from apps.core.enqueue import send_task
from apps.core.redis import REDIS_ERRORS, get_redis
from apps.eventing.services import ensure_subscription_groups, kick_dispatcher
from apps.eventing.transports import ensure_group, stream_key
from apps.registry.news import is_news_topic
from apps.registry.signals import subscription_created, topics_created

logger = logging.getLogger(__name__)


# The topics announced as created and not yet handed to `eventing.follow_new_topics`.
# Bounded in time: a name that waits longer (no dispatcher ran) is the consumers
# process's to subscribe at its refresh, as it subscribes every topic.
FOLLOW_KEY = "steward:follow:topics"
FOLLOW_KEY_SECONDS = 600
FOLLOW_BATCH = 500


@receiver(topics_created, dispatch_uid="eventing.subscribe_stewards_consumers")
def subscribe_stewards_consumers(sender, names, **kwargs) -> None:
    """Steward's catch-all consumers follow a new topic soon, not at the consumers
    process's next refresh, through `eventing.follow_new_topics`, which the dispatcher's
    next run sends (`send_follow_task`): the request that made the topic (a Schema
    Registry client auto-registering a new subject) waits neither for the subscriptions
    and their audit rows nor for a task of its own to be published, only for one Redis
    write and the dispatcher's kick, which the event it wrote with the topic asks for
    anyway. No event can go by unseen meanwhile: the dispatcher makes Steward's consumer
    groups on a stream before its first entry (RedisStreamTransport._steward_groups),
    and should a name be lost (Redis away, a run killed), the consumers process
    subscribes every topic at its next refresh. Only the new topics are looked at:
    registering a thousand new subjects must not cost a walk over every topic each."""
    try:
        pipe = get_redis().pipeline(transaction=False)
        pipe.sadd(FOLLOW_KEY, *names)
        pipe.expire(FOLLOW_KEY, FOLLOW_KEY_SECONDS)
        pipe.execute()
    except REDIS_ERRORS as exc:
        logger.warning(
            "could not announce new topics %s (%s); the refresh follows them", names, exc
        )
        return
    if settings.STEWARD_EVENTING["KICK_ON_COMMIT"]:
        kick_dispatcher()


def send_follow_task() -> int:
    """`eventing.follow_new_topics` for the topics announced since the last call, if
    any: the dispatcher's runs call it. The names left the set as they were read, so two
    runs never send the same name twice."""
    try:
        names = get_redis().spop(FOLLOW_KEY, FOLLOW_BATCH)
    except REDIS_ERRORS as exc:
        logger.warning("could not read the new topics to follow (%s)", exc)
        return 0
    if not names:
        return 0
    try:
        send_task("eventing.follow_new_topics", names=sorted(n.decode() for n in names))
    except Exception as exc:  # noqa: BLE001 - kombu raises its own on a lost broker
        # Not the dispatcher's run to fail for: its drain comes next.
        logger.warning("could not send the follow task (%s); the refresh follows them", exc)
        return 0
    return len(names)


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
    if is_news_topic(topic) and settings.STEWARD_EVENTING["TRANSPORT"] != "amqp":
        ensure_group(get_redis(), stream_key(topic), subscription.group_name, start="0")
    else:
        ensure_subscription_groups([subscription])
