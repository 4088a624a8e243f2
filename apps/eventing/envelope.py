"""The event envelope: the same fields on every transport, in every language."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Envelope:
    event_id: uuid.UUID
    topic: str
    event_type: str
    schema_version: int
    tenant_id: uuid.UUID | None
    aggregate_type: str
    aggregate_id: str
    occurred_at: datetime
    correlation_id: str
    causation_id: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies the payload, which costs more than
        # everything else the dispatcher does per event.
        return {
            "event_id": str(self.event_id),
            "topic": self.topic,
            "event_type": self.event_type,
            "schema_version": self.schema_version,
            "tenant_id": str(self.tenant_id) if self.tenant_id else None,
            "aggregate_type": self.aggregate_type,
            "aggregate_id": self.aggregate_id,
            "occurred_at": self.occurred_at.isoformat(),
            "correlation_id": self.correlation_id,
            "causation_id": self.causation_id,
            "payload": self.payload,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Envelope:
        return cls(
            event_id=uuid.UUID(data["event_id"]),
            topic=data["topic"],
            event_type=data["event_type"],
            schema_version=int(data["schema_version"]),
            tenant_id=uuid.UUID(data["tenant_id"]) if data.get("tenant_id") else None,
            aggregate_type=data["aggregate_type"],
            aggregate_id=str(data["aggregate_id"]),
            occurred_at=datetime.fromisoformat(data["occurred_at"]),
            correlation_id=data.get("correlation_id") or "",
            causation_id=data.get("causation_id") or "",
            payload=data.get("payload") or {},
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> Envelope:
        return cls.from_dict(json.loads(raw))
