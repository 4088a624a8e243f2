"""Writes of the topic catalog: services, topics and subscriptions."""

from __future__ import annotations

from django.db import transaction

from apps.core.context import Actor
from apps.core.errors import ValidationFailed
from apps.registry.models import Service, Subscription, Topic
from apps.tenancy.audit import audit_record, diff, snapshot

SUBSCRIPTION_FIELDS = ["transport", "endpoint", "secret_ref", "is_active"]


def service_ensure(*, actor: Actor, name: str, description: str = "") -> Service:
    service, created = Service.objects.get_or_create(
        name=name, defaults={"description": description}
    )
    if created:
        audit_record(actor=actor, action="service.create", instance=service)
    return service


def topic_create(*, actor: Actor, name: str, description: str = "", producers=()) -> Topic:
    topic = Topic(name=name, description=description)
    topic.full_clean()
    with transaction.atomic():
        topic.save()
        topic.producers.set(producers)
        audit_record(
            actor=actor, action="topic.create", instance=topic, changes={"name": [None, name]}
        )
    subscribe_steward_consumers_on_commit()
    return topic


def subscribe_steward_consumers_on_commit() -> None:
    """For whoever creates a topic: Steward's catch-all consumers follow it as soon as
    it is committed, not at the consumers process's next refresh. Their consumer groups
    start at the end of the stream, so a group created after the topic's first events
    were dispatched would never see them."""
    transaction.on_commit(_subscribe_steward_consumers, robust=True)


def _subscribe_steward_consumers() -> None:
    from apps.eventing.consumers import ensure_subscription_groups, sync_consumer_subscriptions

    ensure_subscription_groups(sync_consumer_subscriptions())


def _check_subscription(subscription: Subscription) -> None:
    from apps.eventing.transports import SecretUnavailable, resolve_secret

    # An inactive subscription delivers nothing: deactivating one whose secret is gone
    # must still work.
    if subscription.transport == Subscription.Transport.WEBHOOK and subscription.is_active:
        if not subscription.endpoint or not subscription.secret_ref:
            raise ValidationFailed(
                "A webhook subscription needs an endpoint and a secret reference.",
                code="webhook_incomplete",
            )
        try:
            resolve_secret(subscription.secret_ref)
        except SecretUnavailable as exc:
            raise ValidationFailed(str(exc), code="secret_unavailable") from None
    subscription.full_clean()


def subscription_create(
    *,
    actor: Actor,
    consumer: Service,
    topic: Topic,
    transport: str,
    endpoint: str = "",
    secret_ref: str = "",
) -> Subscription:
    from apps.eventing.consumers import ensure_subscription_groups

    subscription = Subscription(
        consumer=consumer,
        topic=topic,
        transport=transport,
        endpoint=endpoint,
        secret_ref=secret_ref,
    )
    _check_subscription(subscription)
    with transaction.atomic():
        subscription.save()
        audit_record(
            actor=actor,
            action="subscription.create",
            instance=subscription,
            changes=diff({}, snapshot(subscription, SUBSCRIPTION_FIELDS)),
        )
    # The group starts at the stream's end: the subscription receives what comes next.
    transaction.on_commit(lambda: ensure_subscription_groups([subscription]), robust=True)
    return subscription


def subscription_update(*, actor: Actor, subscription: Subscription, **fields) -> Subscription:
    unknown = set(fields) - {"endpoint", "secret_ref", "is_active"}
    if unknown:
        raise ValidationFailed(
            f"cannot change {', '.join(sorted(unknown))}", code="read_only_field"
        )
    before = snapshot(subscription, SUBSCRIPTION_FIELDS)
    for name, value in fields.items():
        setattr(subscription, name, value)
    _check_subscription(subscription)
    changes = diff(before, snapshot(subscription, SUBSCRIPTION_FIELDS))
    if changes:
        with transaction.atomic():
            subscription.save()
            audit_record(
                actor=actor, action="subscription.update", instance=subscription, changes=changes
            )
    return subscription
