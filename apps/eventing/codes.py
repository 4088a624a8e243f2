"""The error codes eventing's refusals carry (apps.core.codes)."""

from __future__ import annotations

from apps.core.codes import Codes


class EventingCode(Codes):
    PAYLOAD_NOT_JSON = (
        "payload_not_json",
        "The event's payload is not a JSON object (a set, NaN, a list, ...).",
    )
    DEAD_LETTER_RESOLVED = (
        "dead_letter_resolved",
        "The dead letter has been replayed or discarded already.",
    )
    EFFECT_ALREADY_SETTLED = (
        "effect_already_settled",
        "The call to another system is settled already: nothing is left to settle or retry.",
    )
    EFFECT_NOT_ESCALATED = (
        "effect_not_escalated",
        "The call to another system is still being reconciled; it waits on no one.",
    )
    REFERENCE_REQUIRED = (
        "reference_required",
        "Settling a call as done needs the other side's reference for it.",
    )
