"""What of the registry waits on a person (apps.core.attention): consumers that schema
news cannot reach, because they have no active subscription to receive it through."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from apps.core.attention import Action, Input, Item, Kind
from apps.core.codes import CoreCode
from apps.core.errors import NotFound
from apps.core.scope import system_scope
from apps.registry import selectors, services, versions
from apps.registry.models import Subscription


def _subscriptions_of(service: str) -> str:
    return f"{reverse('registry:subscription-list')}?{urlencode({'consumer': service})}"


def _key(found) -> str:
    return f"{found.service_id}-{found.topic_id}"


class UnreachableConsumers(Kind):
    slug = "unreachable-consumer"
    title = "Consumers schema news cannot reach"
    description = (
        "A service consumes a topic with a schema but has no active subscription, so news of "
        "the topic's schema versions (a breaking one awaiting its acknowledgement among them) "
        "cannot reach it: subscribe it, and the waiting version's news is sent again."
    )
    actions = (
        Action(
            "subscribe",
            "Subscribe it",
            (
                Input(
                    "transport",
                    "Transport",
                    kind="choice",
                    choices=tuple(Subscription.Transport.choices),
                ),
                Input("endpoint", "Webhook URL (webhooks only)", required=False),
                Input("secret_ref", "Secret reference (webhooks only)", required=False),
            ),
        ),
    )

    def _found(self):
        with system_scope():
            return selectors.unreachable_consumers()

    def items(self) -> list[Item]:
        return [
            Item(
                key=_key(found),
                title=f"{found.service} on {found.topic} (v{found.schema_version}"
                f"{', awaiting its acknowledgement' if found.awaiting_acknowledgement else ''})",
                waiting_for=found.detail,
                since=None,  # the queue says since when it has known
                url=_subscriptions_of(found.service),
            )
            for found in self._found()
        ]

    def count(self) -> int:
        return len(self._found())

    def act(self, *, actor, key, action, values) -> str:
        found = next((f for f in self._found() if _key(f) == key), None)
        if found is None:
            raise NotFound(
                "That item is not waiting in the attention queue.", code=CoreCode.NOT_IN_QUEUE
            )
        with system_scope():
            consumer = selectors.service_list().get(pk=found.service_id)
            topic = selectors.topic_list().get(pk=found.topic_id)
            services.subscription_create(
                actor=actor,
                consumer=consumer,
                topic=topic,
                transport=values["transport"],
                endpoint=values.get("endpoint", ""),
                secret_ref=values.get("secret_ref", ""),
            )
            reminded = []
            if found.waiting_version_id:
                version = selectors.schema_version_list().get(pk=found.waiting_version_id)
                reminded = versions.remind(actor=actor, version=version)
        sent = " and the waiting version's news sent again" if reminded else ""
        return f"{consumer.name} subscribed to {topic.name}{sent}."


KINDS = [UnreachableConsumers()]
