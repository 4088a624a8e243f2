"""What of the stores waits on a person (apps.core.attention): bindings flagged by the
rules, waiting for a decision, and bindings whose work has stalled."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.core.attention import Action, Input, Item, Kind
from apps.stores import selectors, services

REASON = Input("reason", "Reason", kind="textarea")


def _item(binding, waiting_for: str, since) -> Item:
    return Item(
        key=str(binding.pk),
        title=f"{binding.store.slug} for {binding.tenant.slug} ({binding.status})",
        waiting_for=waiting_for,
        since=since,
        tenant_id=binding.tenant_id,
        tenant=binding.tenant.slug,
        url=binding.get_absolute_url(),
    )


class FlaggedBindings(Kind):
    slug = "flagged-binding"
    title = "Flagged bindings"
    description = (
        "A binding the residency or workload rules in force no longer allow: retire it, or "
        "grant it an exception with a reason and an expiry."
    )
    actions = (
        Action(
            "retire",
            "Retire the binding",
            (REASON,),
            confirm="This revokes the binding's credentials and retires it; its owner is "
            "then asked to purge the tenant's data.",
        ),
        Action(
            "grant-exception",
            "Grant an exception",
            (REASON, Input("expires_at", "Until (UTC)", kind="datetime")),
        ),
    )

    def waiting(self):
        return selectors.bindings_awaiting_decision()

    def item(self, b) -> Item:
        return _item(
            b,
            b.violation or b.workload_violation,
            b.violation_detected_at or b.workload_violation_detected_at or b.updated_at,
        )

    def resolve(self, *, actor, row, action, values) -> str:
        binding = row
        if action == "retire":
            services.binding_retire(actor=actor, binding=binding, reason=values["reason"])
            return f"Binding {binding.store.slug} for {binding.tenant.slug} is retiring."
        services.binding_grant_exception(
            actor=actor,
            binding=binding,
            reason=values["reason"],
            expires_at=values["expires_at"],
        )
        return "Exception granted; it ends by itself at its expiry."


class StalledBindings(Kind):
    slug = "stalled-binding"
    title = "Stalled bindings"
    description = (
        "A binding still Requested or Retiring long after its work was sent, though the "
        "minute's sweep sends it again: the broker keeps failing or no worker runs it."
    )
    actions = (Action("retry", "Send its work again now"),)

    def waiting(self):
        minutes = settings.STEWARD_ATTENTION_STALLED_MINUTES
        return selectors.bindings_stalled(timezone.now() - timedelta(minutes=minutes))

    def item(self, b) -> Item:
        return _item(
            b,
            f"Still {b.status}, though its work is sent again every minute: its worker never "
            f"took it, or the secret broker keeps failing. Last said: {b.status_reason or '—'}",
            b.updated_at,
        )

    def resolve(self, *, actor, row, action, values) -> str:
        outcome = services.binding_retry(actor=actor, binding=row)
        return f"Sent again: {outcome}."


KINDS = [FlaggedBindings(), StalledBindings()]
