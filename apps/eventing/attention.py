"""What of eventing waits on a person (apps.core.attention): dead letters, each an event
a subscriber could not take after every attempt."""

from __future__ import annotations

from apps.core.attention import Action, Item, Kind
from apps.eventing import selectors, services


class DeadLetters(Kind):
    slug = "dead-letter"
    title = "Dead letters"
    description = (
        "An event its subscriber refused or never took, after every attempt: replay it once "
        "the subscriber is mended, or discard it."
    )
    actions = (Action("replay", "Replay"), Action("discard", "Discard"))

    def waiting(self):
        return selectors.dead_letters_waiting()

    def item(self, dead) -> Item:
        return Item(
            key=str(dead.pk),
            title=f"{dead.event_type} on {dead.topic} for {dead.subscription.consumer.name}",
            waiting_for=dead.error[:300],
            since=dead.created_at,
            tenant_id=dead.tenant_id,
            tenant=dead.tenant.slug if dead.tenant_id else "",
            url=dead.get_absolute_url(),
        )

    def resolve(self, *, actor, row, action, values) -> str:
        if action == "replay":
            services.dead_letter_replay(actor=actor, dead_letter=row)
            return "Queued for one more delivery."
        services.dead_letter_discard(actor=actor, dead_letter=row)
        return "Discarded."


KINDS = [DeadLetters()]
