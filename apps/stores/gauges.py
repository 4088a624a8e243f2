"""The stores' gauges at `/metrics` (apps.core.metrics): bindings by status."""

from __future__ import annotations

from django.db.models import Count

from apps.core.metrics import gauge_by
from apps.stores.models import StoreBinding


def bindings_by_status():
    return StoreBinding.objects.values_list("status").annotate(n=Count("id"))


def collect():
    yield gauge_by(
        "steward_store_bindings", "Store bindings by status.", bindings_by_status(), "status"
    )
