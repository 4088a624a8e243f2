"""The hash-chained evidence of a governance order, and how anyone verifies it."""

from __future__ import annotations

import hashlib
import json

from django.db import connection
from django.utils import timezone

from apps.governance.models import EvidenceEntry, GovernanceOrder


def genesis(order_id, tenant_id, kind: str) -> str:
    """The chain's first link: the order itself, so no entry can be moved to another
    order's chain, and a document's order, tenant and kind are covered too."""
    return hashlib.sha256(f"steward-evidence:{order_id}:{tenant_id}:{kind}".encode()).hexdigest()


def _digest(previous: str, sequence: int, kind: str, at: str, data: dict) -> str:
    body = json.dumps(
        {"sequence": sequence, "kind": kind, "at": at, "data": data},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(f"{previous}{body}".encode()).hexdigest()


def append(order: GovernanceOrder, kind: str, **data) -> EvidenceEntry:
    """Add an entry to the order's chain, in the caller's transaction (tenant scope).

    The order row is locked first, so concurrent appends take turns and the chain
    never forks.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM governance_governanceorder WHERE id = %s FOR UPDATE", [order.pk]
        )
    last = EvidenceEntry.objects.filter(order=order).order_by("-sequence").first()
    sequence = last.sequence + 1 if last else 1
    previous = last.digest if last else genesis(order.pk, order.tenant_id, order.kind)
    at = timezone.now().isoformat()
    data = json.loads(json.dumps(data, default=str))  # exactly what the digest covers
    return EvidenceEntry.objects.create(
        order=order,
        tenant_id=order.tenant_id,
        sequence=sequence,
        kind=kind,
        data=data,
        at=at,
        previous_digest=previous,
        digest=_digest(previous, sequence, kind, at, data),
    )


def document(order: GovernanceOrder) -> dict:
    """The order's evidence as one JSON document, for download and independent checking."""
    entries = [
        {
            "sequence": e.sequence,
            "kind": e.kind,
            "at": e.at.isoformat(),
            "data": e.data,
            "previous_digest": e.previous_digest,
            "digest": e.digest,
        }
        for e in order.evidence.order_by("sequence")
    ]
    return {
        "order": str(order.pk),
        "tenant": str(order.tenant_id),
        "kind": order.kind,
        "algorithm": "sha256(previous_digest + canonical JSON of sequence, kind, at, data); "
        "the first previous_digest is sha256('steward-evidence:<order>:<tenant>:<kind>')",
        "entries": entries,
        "final_digest": entries[-1]["digest"]
        if entries
        else genesis(order.pk, order.tenant_id, order.kind),
    }


def verify(doc: dict) -> tuple[bool, int | None]:
    """(True, None) when every link holds; (False, n) naming the first entry that does not."""
    previous = genesis(doc["order"], doc["tenant"], doc["kind"])
    for expected, entry in enumerate(doc["entries"], start=1):
        digest = _digest(previous, entry["sequence"], entry["kind"], entry["at"], entry["data"])
        if (
            entry["sequence"] != expected
            or entry["previous_digest"] != previous
            or entry["digest"] != digest
        ):
            return False, expected
        previous = digest
    if doc["final_digest"] != previous:
        return False, len(doc["entries"])
    return True, None
