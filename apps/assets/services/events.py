"""The events an asset's changes announce, on one topic."""

from __future__ import annotations

from apps.assets.models import Asset
from apps.core.outbox import NewEvent, emit_many

TOPIC = "assets.asset"


def asset_event(tenant_id, asset_id, status: str, event_type: str, **payload) -> NewEvent:
    """An asset event: the asset, its status now, and what else the event says."""
    return NewEvent(
        tenant=tenant_id,
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="asset",
        aggregate_id=str(asset_id),
        payload={"asset_id": str(asset_id), "status": status, **payload},
    )


def emit_asset_event(asset: Asset, event_type: str, **payload) -> None:
    emit_many([asset_event(asset.tenant_id, asset.pk, asset.status, event_type, **payload)])
