"""The inbox: each of Steward's own consumers (apps.eventing.consumer_registry) runs its
handler once per event.

A handler inserts `(consumer, event_id)` into the inbox in the same transaction as its
effects; a duplicate delivery finds the row and is acknowledged without running the
handler. Inbox rows (and recent events) live for the deduplication window. The
runners that read the streams and call `handle_envelopes` are in `consumers`; the
handlers themselves in `handlers`.
"""

from __future__ import annotations

from django.db import connection, transaction

from apps.core.context import request_id
from apps.core.scope import owner_scope
from apps.eventing.consumer_registry import Handler
from apps.eventing.envelope import Envelope
from apps.eventing.models import InboxEntry

INBOX = InboxEntry._meta.db_table


def _claim_inbox(consumer_name: str, envelopes: list[Envelope]) -> set:
    """Insert inbox rows; the event ids that were new (the others are duplicates)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {INBOX} (consumer, event_id, tenant_id, handled_at)
            SELECT %s, e.id, e.tenant, now()
            FROM unnest(%s::uuid[], %s::uuid[]) AS e(id, tenant)
            ON CONFLICT (consumer, event_id) DO NOTHING
            RETURNING event_id
            """,  # noqa: S608 - table name only
            [
                consumer_name,
                [e.event_id for e in envelopes],
                [e.tenant_id for e in envelopes],
            ],
        )
        return {row[0] for row in cursor.fetchall()}


def handle_envelopes(handler: Handler, envelopes: list[Envelope]) -> int:
    """Run the handler once per new envelope, in one transaction with the inbox rows.

    Envelopes are grouped by tenant, each group in its tenant's scope; order within
    a tenant (and so within an aggregate) is kept. Returns how many were new.
    """
    handled = 0
    with transaction.atomic():
        groups: dict = {}
        for envelope in envelopes:
            groups.setdefault(envelope.tenant_id, []).append(envelope)
        for tenant_id, group in groups.items():
            with owner_scope(tenant_id):
                new = _claim_inbox(handler.consumer, group)
                # `new` holds each id once; a batch carrying an envelope twice (the
                # dispatcher's redelivery after a crash) still runs the handler once.
                fresh = []
                for envelope in group:
                    if envelope.event_id in new:
                        new.discard(envelope.event_id)
                        fresh.append(envelope)
                if handler.batch and fresh:
                    handler.func(fresh)
                else:
                    for envelope in fresh:
                        # What the handler logs, enqueues and emits carries the event's
                        # correlation id: one id follows a change across services.
                        token = request_id.set(envelope.correlation_id)
                        try:
                            handler.func(envelope)
                        finally:
                            request_id.reset(token)
                handled += len(fresh)
    return handled
