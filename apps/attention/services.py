"""The attention queue, written: the scan that remembers what entered and left (and
announces it), and a person's action on an item."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from apps.attention import selectors
from apps.attention.codes import AttentionCode
from apps.attention.models import AttentionEntry
from apps.core.attention import Item, kinds
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import NotFound, ValidationFailed
from apps.core.locks import advisory_lock
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope
from apps.governance.permissions import require_operator
from apps.registry.catalog import STEWARD_SERVICE
from apps.registry.services import topic_ensure

logger = logging.getLogger(__name__)
TOPIC = "steward.attention"


def _payload(kind: str, item: Item | None, entry: AttentionEntry) -> dict:
    body = {
        "kind": kind,
        "key": entry.key,
        "tenant": str(entry.tenant_id) if entry.tenant_id else None,
        "title": entry.title,
        "entered_at": entry.entered_at.isoformat(),
    }
    if item is not None:
        body |= {
            "waiting_for": item.waiting_for,
            "since": item.since.isoformat() if item.since else None,
            "url": item.url,
        }
    else:
        body["left_at"] = entry.left_at.isoformat()
    return body


def _announce(event_type: str, kind: str, item: Item | None, entry: AttentionEntry) -> None:
    emit(
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="attention.item",
        aggregate_id=f"{kind}:{entry.key}",
        payload=_payload(kind, item, entry),
        tenant=entry.tenant_id,
    )


def attention_topic_ensure() -> None:
    topic_ensure(
        name=TOPIC,
        description="The attention queue: AttentionItemRaised, AttentionItemCleared.",
        producers=[STEWARD_SERVICE],
    )


def scan(kind: str | None = None) -> dict:
    """Compare the kinds' items now with the queue's open entries: an item new to the
    queue gets an entry and AttentionItemRaised on `steward.attention` (a pager or a
    chat bridge subscribes there); an entry whose item is gone is closed with
    AttentionItemCleared. Scans take turns (an advisory lock), so an item is announced
    once however many run."""
    raised = cleared = 0
    with advisory_lock("attention.scan"):
        with system_scope():
            attention_topic_ensure()
        for group in selectors.queue(kind):
            slug = group.kind.slug
            now = {item.key: item for item in group.items}
            with system_scope():
                known = {e.key: e for e in selectors.open_entries().filter(kind=slug)}
            for key, item in now.items():
                if key in known:
                    continue
                with owner_scope(item.tenant_id), transaction.atomic():
                    entry = AttentionEntry.objects.create(
                        kind=slug, key=key, tenant_id=item.tenant_id, title=item.title[:300]
                    )
                    _announce("AttentionItemRaised", slug, item, entry)
                raised += 1
            for key, entry in known.items():
                if key in now:
                    continue
                with owner_scope(entry.tenant_id), transaction.atomic():
                    entry.left_at = timezone.now()
                    entry.save(update_fields=["left_at"])
                    _announce("AttentionItemCleared", slug, None, entry)
                cleared += 1
    return {"raised": raised, "cleared": cleared}


def item_act(*, actor: Actor, kind: str, key: str, action: str, data) -> str:
    """A person's action on one item: an operator's, with the action's inputs; the
    kind's services do it (audited, refusing with their stable codes, changing nothing
    when they refuse), then the kind is scanned again so the queue shows the outcome.
    The sentence to tell the person."""
    require_operator(actor, "act on the attention queue")
    found = kinds().get(kind)
    if found is None:
        raise NotFound("There is no such kind of item.", code=CoreCode.NOT_FOUND)
    chosen = found.action(action)
    if chosen is None:
        raise ValidationFailed(
            f"{found.title} take {', '.join(a.name for a in found.actions)}, not {action!r}.",
            code=AttentionCode.UNKNOWN_ACTION,
            field="action",
        )
    if chosen.link_only:
        raise ValidationFailed(
            f"{chosen.label} is done on its own page.",
            code=AttentionCode.UNKNOWN_ACTION,
            field="action",
        )
    said = found.act(actor=actor, key=key, action=action, values=chosen.clean(data))
    scan(kind)
    return said
