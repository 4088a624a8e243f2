"""The event envelope: the same fields on every transport, in every language."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
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
        data = asdict(self)
        data["event_id"] = str(self.event_id)
        data["tenant_id"] = str(self.tenant_id) if self.tenant_id else None
        data["occurred_at"] = self.occurred_at.isoformat()
        return data

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
