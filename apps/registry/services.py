"""Writes of the topic catalog: services, topics and subscriptions.

Eventing, above the registry, keeps Steward's own consumers' services and
subscriptions in the catalog and records each subscription's delivery health through
these functions too; the registry tells eventing what it must act on through its
signals (`apps.registry.signals`), after commit.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import DomainError, ValidationFailed
from apps.core.outbound import OutboundRefused, check_url
from apps.registry.catalog import STEWARD_SERVICE
from apps.registry.codes import RegistryCode
from apps.registry.models import SchemaReference, Service, Subscription, Topic
from apps.registry.news import (
    AWAITING,
    LOWERED,
    NEWS_TOPIC_PREFIX,
    PUBLISHED,
    WITHDRAWN,
    is_news_topic,
    news_topic,
)
from apps.registry.signals import subscription_created, topics_created
from apps.registry.webhook_secrets import SecretUnavailable, resolve_secret
from apps.tenancy.audit import audit_record, diff, snapshot

SUBSCRIPTION_FIELDS = ["transport", "endpoint", "secret_ref", "is_active"]


class NotPermitted(DomainError):
    """The caller acts beyond what it speaks for: 403 `permission_denied`, as DRF's
    PermissionDenied is answered, so a refusal reads the same from every way in."""

    status = 403
    code = CoreCode.PERMISSION_DENIED
    title = "You do not have permission to perform this action."


def require_speaks_for(actor: Actor, service_name: str) -> None:
    """A service account speaks only for the service of its own name; people (operators,
    the API and the console let no one else this far) and Steward speak for any."""
    account = actor.service_account
    if account is not None and account.name != service_name:
        raise NotPermitted(f"This token speaks for {account.name}, not {service_name}.")


def require_produces(actor: Actor, topic: Topic) -> None:
    """What only a topic's producer may do to it (withdraw a waiting schema version): a
    service account must be one of its producers; operators and Steward may too."""
    account = actor.service_account
    if account is not None and not topic.producers.filter(name=account.name).exists():
        raise NotPermitted(f"{account.name} does not produce {topic.name}.")


def require_may_name_producers(
    actor: Actor, topic_name: str, named: Iterable[str], producers: Iterable[str] | None
) -> None:
    """Who a service account may make a topic's producers: itself on a topic it creates
    (`producers` None: the topic is new), others only on a topic it produces, as that
    topic's producers' grant. Joining a topic others produce is an operator's act: a
    producer may lower its level and publish, so joining is never self-service."""
    account = actor.service_account
    if account is None:
        return
    named = set(named)
    owners = {account.name} if producers is None else set(producers)
    if account.name not in owners:
        raise NotPermitted(
            f"{account.name} does not produce {topic_name}: an operator, or one of its "
            "producers, makes a service its producer."
        )
    if producers is None and named and account.name not in named:
        raise NotPermitted(f"{account.name} creates {topic_name} only as one of its producers.")


def require_operator(actor: Actor) -> None:
    """What only operators (and Steward itself) may do: registry-wide settings."""
    user = actor.user
    if actor.service_account is not None or (user is not None and not user.is_operator):
        raise NotPermitted("Only an operator may change a registry-wide setting.")


# --------------------------------------------------------------------------- services


def service_register(*, actor: Actor, name: str, description: str = "") -> Service:
    """A service named in the catalog by a caller: a service account names only its own
    (another's name is that service's to take), operators any."""
    require_speaks_for(actor, name)
    return service_ensure(actor=actor, name=name, description=description)


def service_ensure(*, actor: Actor, name: str, description: str = "") -> Service:
    """The service of that name, created (and audited) if it is new."""
    service = Service.objects.filter(name=name).first()
    if service is not None:
        return service
    service = Service(name=name, description=description)
    # The name is not held to the slug rule of its field: Steward's own consumers have
    # dotted names, and a service account's name is whatever the account was given.
    # The unique constraint guards it; a concurrent creator's row is the answer.
    service.full_clean(exclude=["name"], validate_unique=False)
    try:
        with transaction.atomic():
            service.save()
            audit_record(actor=actor, action="service.create", instance=service)
    except IntegrityError:
        return Service.objects.get(name=name)
    return service


def service_for_caller(*, actor: Actor, named: str | None = None) -> Service:
    """The registry service a call speaks for: a service account speaks for the service
    of its own name (naming another is refused); an operator names one."""
    account = actor.service_account
    if account is not None:
        if named:
            require_speaks_for(actor, named)
        return service_ensure(actor=actor, name=account.name)
    if not named:
        raise ValidationFailed(
            "Name the service.", code=RegistryCode.SERVICE_REQUIRED, field="service"
        )
    return service_ensure(actor=actor, name=named)


# --------------------------------------------------------------------------- topics


def topic_create(
    *,
    actor: Actor,
    name: str,
    description: str = "",
    producers=(),
    compatibility_policy: str = "STRICT",
) -> Topic:
    """A new topic; `compatibility_policy` (STRICT or LENIENT) is how its JSON Schema
    versions are judged (docs/schema-registry.md)."""
    if producers:
        require_may_name_producers(actor, name, [p.name for p in producers], None)
    topic = Topic(name=name, description=description, compatibility_policy=compatibility_policy)
    topic.full_clean()
    with transaction.atomic():
        topic.save()
        topic.producers.set(producers)
        changes = {"name": [None, name], "compatibility_policy": [None, compatibility_policy]}
        audit_record(actor=actor, action="topic.create", instance=topic, changes=changes)
    subscribe_steward_consumers_on_commit([name])
    return topic


def topic_ensure(*, name: str, description: str = "", producers=(), consumers=()) -> Topic:
    """The topic of that name; created with its producers and consumers (service
    names), and followed by Steward's consumers, if it is new.

    For topics Steward makes for its own traffic (governance's owner-task topics),
    inside a tenant's transaction: a platform audit row cannot be written from a tenant
    scope, so none is; the topic's first event, written in the same transaction, names
    it. Topics a person or a release asks for go through topic_create, audited."""
    topic, created = Topic.objects.get_or_create(name=name, defaults={"description": description})
    if created:
        topic.producers.set([Service.objects.get_or_create(name=n)[0] for n in producers])
        topic.consumers.set([Service.objects.get_or_create(name=n)[0] for n in consumers])
        subscribe_steward_consumers_on_commit([name])
    return topic


def topic_consumers_add(
    *, actor: Actor, topic: Topic, consumers: list[Service], registered: Iterable[str] = ()
) -> None:
    """Register the services as consumers of the topic (`registered`: the names the
    caller read it has already), and keep each one's schema news delivery in step with
    its subscriptions: the news topic and subscription a consumer hears its news through
    exist because it is registered, so announcing news never makes them."""
    known = set(registered)
    topic.consumers.add(*[c for c in consumers if c.name not in known])
    for consumer in consumers:
        news_delivery_sync(actor=actor, consumer=consumer)


def subscribe_steward_consumers_on_commit(names: list[str]) -> None:
    """For whoever creates a topic: Steward's catch-all consumers follow it as soon as
    it is committed, not at the consumers process's next refresh. Their consumer groups
    start at the end of the stream, so a group created after the topic's first events
    were dispatched would never see them.

    The consumers are eventing's, above the registry: this sends `topics_created` on
    commit, and eventing's receiver subscribes them (apps.eventing.signals).
    """
    transaction.on_commit(lambda: topics_created.send(sender=Topic, names=names), robust=True)


# --------------------------------------------------------------------------- subscriptions


def _check_subscription(subscription: Subscription) -> None:
    # An inactive subscription delivers nothing: deactivating one whose secret is gone
    # must still work.
    if subscription.transport == Subscription.Transport.WEBHOOK and subscription.is_active:
        if not subscription.endpoint or not subscription.secret_ref:
            raise ValidationFailed(
                "A webhook subscription needs an endpoint and a secret reference.",
                code=RegistryCode.WEBHOOK_INCOMPLETE,
            )
        try:
            check_url(subscription.endpoint)
        except OutboundRefused as exc:
            raise ValidationFailed(
                f"Steward does not call this endpoint: {exc}.",
                code=RegistryCode.ENDPOINT_NOT_ALLOWED,
                field="endpoint",
            ) from None
        try:
            resolve_secret(subscription.secret_ref)
        except SecretUnavailable as exc:
            raise ValidationFailed(str(exc), code=RegistryCode.SECRET_UNAVAILABLE) from None
    subscription.full_clean()


def _audit_created(actor: Actor, subscription: Subscription) -> None:
    audit_record(
        actor=actor,
        action="subscription.create",
        instance=subscription,
        changes=diff({}, snapshot(subscription, SUBSCRIPTION_FIELDS)),
    )


def subscription_create(
    *,
    actor: Actor,
    consumer: Service,
    topic: Topic,
    transport: str,
    endpoint: str = "",
    secret_ref: str = "",
    is_active: bool = True,
) -> Subscription:
    # A subscription belongs to its consumer: where its events go, signed with its secret.
    require_speaks_for(actor, consumer.name)
    subscription = Subscription(
        consumer=consumer,
        topic=topic,
        transport=transport,
        endpoint=endpoint,
        secret_ref=secret_ref,
        is_active=is_active,
    )
    _check_subscription(subscription)
    with transaction.atomic():
        subscription.save()
        _audit_created(actor, subscription)
        # Eventing makes its consumer group once this commits, at the stream's end: the
        # subscription receives what comes next.
        _announce_created(subscription)
        # The consumer's schema news follows it through this subscription from now on.
        _sync_news_of(actor, subscription)
    return subscription


def _announce_created(subscription: Subscription) -> None:
    transaction.on_commit(
        lambda: subscription_created.send(sender=Subscription, subscription=subscription),
        robust=True,
    )


def _sync_news_of(actor: Actor, subscription: Subscription) -> None:
    if not is_news_topic(subscription.topic.name):
        news_delivery_sync(actor=actor, consumer=subscription.consumer)


def subscription_ensure(
    *,
    actor: Actor,
    consumer: Service,
    topic: Topic,
    transport: str = Subscription.Transport.REDIS_STREAM,
) -> Subscription:
    """The consumer's subscription to the topic, created (and audited) if it is new:
    how eventing keeps Steward's own consumers in the catalog. Its caller makes the
    consumer groups itself, so no `subscription_created` is sent."""
    found = Subscription.objects.filter(consumer=consumer, topic=topic, transport=transport)
    subscription = found.first()
    if subscription is not None:
        return subscription
    subscription = Subscription(consumer=consumer, topic=topic, transport=transport)
    if transport == Subscription.Transport.WEBHOOK:
        _check_subscription(subscription)
    else:
        # Every new topic brings one per Steward consumer, on the commit of the request
        # that made it: the consumer and the topic are rows the caller holds, uniqueness
        # is the database's (a concurrent maker is the IntegrityError below) and the
        # webhook rule does not concern a stream, so none of them is asked again.
        subscription.full_clean(
            exclude=["consumer", "topic"], validate_unique=False, validate_constraints=False
        )
    try:
        with transaction.atomic():
            subscription.save()
            _audit_created(actor, subscription)
    except IntegrityError:  # another process subscribed it meanwhile
        return found.get()
    return subscription


def subscription_update(*, actor: Actor, subscription: Subscription, **fields) -> Subscription:
    require_speaks_for(actor, subscription.consumer.name)
    unknown = set(fields) - {"endpoint", "secret_ref", "is_active"}
    if unknown:
        raise ValidationFailed(
            f"cannot change {', '.join(sorted(unknown))}", code=RegistryCode.READ_ONLY_FIELD
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
            # A moved endpoint, a rotated secret reference or a deactivation moves the
            # consumer's schema news with it.
            _sync_news_of(actor, subscription)
    return subscription


# --------------------------------------------------------------------------- schema news


def news_delivery_sync(*, actor: Actor, consumer: Service) -> list[Subscription]:
    """Keep the consumer's delivery of schema news in step with its own subscriptions;
    its active news subscriptions (none: the consumer is unreachable).

    For each transport the consumer has an active subscription with (on any topic but
    a news topic), its news topic `registry.news.<service>` gets a subscription of the
    same transport that mirrors the first of them by topic name: the same webhook
    endpoint and secret reference, or, for a stream, the same consumer group name (a
    stream subscription's group is its consumer's name). A transport the consumer no
    longer has an active subscription with is deactivated on the news topic, not
    deleted: its dead letters and delivery counts keep pointing at it.

    Idempotent, and cheap when nothing changed (two queries): called whenever the
    consumer is registered on a topic (topic_consumers_add) and whenever one of its
    subscriptions changes, so announcing news only reads which consumers can hear it.
    """
    name = news_topic(consumer.name)
    mine = Subscription.objects.filter(consumer=consumer).select_related("topic")
    sources: dict[str, Subscription] = {}
    mirrors: dict[str, Subscription] = {}
    for subscription in mine.order_by("topic__name", "pk"):
        if subscription.topic.name == name:
            mirrors[subscription.transport] = subscription
        elif subscription.is_active and not subscription.topic.name.startswith(NEWS_TOPIC_PREFIX):
            sources.setdefault(subscription.transport, subscription)
    if not sources and not any(m.is_active for m in mirrors.values()):
        return []
    if not mirrors and not consumer.consumes.exists():
        return []  # it reads no topic's payloads, so no news concerns it (yet)
    topic = (
        next(iter(mirrors.values())).topic
        if mirrors
        else topic_ensure(
            name=name,
            description=f"Schema news for {consumer.name}: {AWAITING}, {PUBLISHED}, "
            f"{WITHDRAWN}, {LOWERED}.",
            producers=[STEWARD_SERVICE],
            consumers=[consumer.name],
        )
    )
    active = []
    with transaction.atomic():
        for transport in sorted(set(sources) | set(mirrors)):
            source, mirror = sources.get(transport), mirrors.get(transport)
            if source is None:
                if mirror.is_active:
                    _mirror_update(actor, mirror, is_active=False)
                continue
            wanted = {"endpoint": source.endpoint, "secret_ref": source.secret_ref}
            if mirror is None:
                mirror = Subscription(consumer=consumer, topic=topic, transport=transport, **wanted)
                try:
                    with transaction.atomic():
                        mirror.save()
                        _audit_created(actor, mirror)
                except IntegrityError:
                    # Two announcements to the same new consumer at once: the other one
                    # made it (the unique index held this insert until it committed).
                    # No lock on the consumer instead: releases syncing several topics
                    # would take such locks in different orders and deadlock.
                    mirror = Subscription.objects.get(
                        consumer=consumer, topic=topic, transport=transport
                    )
                else:
                    _announce_created(mirror)
            else:
                _mirror_update(actor, mirror, is_active=True, **wanted)
            active.append(mirror)
    return active


def news_delivery_sync_all(*, actor: Actor) -> list[Subscription]:
    """`news_delivery_sync` for every consumer of a topic that has a subscription: at
    set-up, so that every consumer's news subscriptions (and a stream reader's stream)
    are in step with its own subscriptions before the first news, whatever made them."""
    consumers = Service.objects.filter(consumes__isnull=False, subscriptions__isnull=False)
    return [
        mirror
        for consumer in consumers.distinct().order_by("name")
        for mirror in news_delivery_sync(actor=actor, consumer=consumer)
    ]


def _mirror_update(actor: Actor, mirror: Subscription, **fields) -> None:
    before = snapshot(mirror, SUBSCRIPTION_FIELDS)
    for field, value in fields.items():
        setattr(mirror, field, value)
    changes = diff(before, snapshot(mirror, SUBSCRIPTION_FIELDS))
    if changes:
        mirror.save()
        audit_record(actor=actor, action="subscription.update", instance=mirror, changes=changes)


# Delivery health is kept by eventing's runners on every delivery: one conditional
# UPDATE each, no full_clean and no audit row (it is telemetry, not a change anyone
# made, and an audit row per delivery would drown the trail).


def subscription_mark_delivered(*, subscription_id: int) -> None:
    Subscription.objects.filter(pk=subscription_id).update(
        consecutive_failures=0, last_error="", last_delivered_at=timezone.now()
    )


def subscription_mark_failed(*, subscription_id: int, error: str) -> None:
    Subscription.objects.filter(pk=subscription_id).update(
        consecutive_failures=F("consecutive_failures") + 1, last_error=error[:500]
    )


def schema_references_record(version, resolved: list[tuple[str, object]]) -> list | None:
    """The references a version was registered with (name, referenced version), kept
    once, when the registration created the version: a registration answered with an
    existing version changes nothing. The caller's transaction. Answers the version's
    references when it knows them without asking (none, or the rows it made), else
    None."""
    if not resolved:
        return []
    if SchemaReference.objects.filter(version=version).exists():
        return None
    return SchemaReference.objects.bulk_create(
        [
            SchemaReference(version=version, position=n, name=name, referenced=target)
            for n, (name, target) in enumerate(resolved)
        ]
    )
