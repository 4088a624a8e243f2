"""What of eventing waits on a person (apps.core.attention): dead letters, each an event
a subscriber could not take after every attempt, and uncertain effects reconciliation
gave up on."""

from __future__ import annotations

from django.urls import reverse

from apps.core.attention import Action, Input, Item, Kind
from apps.eventing import effects, selectors, services

REASON = Input("reason", "Reason", kind="textarea")


class DeadLetters(Kind):
    slug = "dead-letter"
    title = "Dead letters"
    description = (
        "An event its subscriber refused or never took, after every attempt: replay it once "
        "the subscriber is mended, or discard it."
    )
    actions = (
        Action("replay", "Replay"),
        Action(
            "discard",
            "Discard",
            confirm="This will discard the event for this subscriber: it is never delivered.",
        ),
    )

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


class EscalatedEffects(Kind):
    slug = "uncertain-effect"
    title = "Unsettled calls to other systems"
    description = (
        "A call whose outcome the other side still cannot tell after every check allowed: "
        "settle it by hand (done, with the other side's reference, or not done), or give it "
        "a fresh round of checks."
    )
    actions = (
        Action(
            "settle-done",
            "Settle as done",
            (Input("reference", "The other side's reference"), REASON),
        ),
        Action("settle-not-done", "Settle as not done", (REASON,)),
        Action("retry", "Check again now"),
    )

    def waiting(self):
        return selectors.effects_needing_a_person()

    def item(self, effect) -> Item:
        return Item(
            key=str(effect.pk),
            title=f"{effect.operation} on {effect.target_system} ({effect.external_ref})",
            waiting_for=f"After {effect.checks} checks the other side cannot tell: "
            f"{effect.last_error or 'no answer'}",
            since=effect.escalated_at,
            tenant_id=effect.tenant_id,
            tenant=effect.tenant.slug if effect.tenant_id else "",
            url=reverse("eventing:effect-list"),
        )

    def resolve(self, *, actor, row, action, values) -> str:
        if action == "retry":
            effects.effect_retry_now(effect=row, actor=actor)
            return "Checked again from now, with a fresh allowance."
        done = action == "settle-done"
        effects.effect_settle(
            effect=row,
            actor=actor,
            done=done,
            reason=values["reason"],
            reference=values.get("reference", ""),
        )
        return "Settled as done." if done else "Settled as not done."


KINDS = [DeadLetters(), EscalatedEffects()]
