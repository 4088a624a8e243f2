"""The API viewset of platform catalog rows (regions, stores, profiles…).

It writes through tenancy's audited catalog services, so it lives in tenancy, above
core's API base (apps.core.api.views); the apps whose catalogs it serves (tenancy's
regions, the stores' stores and profiles) sit above it.
"""

from __future__ import annotations

from rest_framework import viewsets

from apps.core.api.permissions import PLATFORM
from apps.core.api.views import IdempotentCreateMixin, ReadShapeUpdateMixin, StewardViewSetMixin
from apps.tenancy import services


class StewardCatalogViewSet(
    StewardViewSetMixin, IdempotentCreateMixin, ReadShapeUpdateMixin, viewsets.ModelViewSet
):
    """Platform catalog rows (regions, stores, profiles…): everyone reads; operators
    and platform services write, through one audited service. Subclasses set
    `scope_app`, the serializer and the queryset."""

    steward_scope = "system"
    write_access = PLATFORM

    def perform_create(self, serializer):
        serializer.instance = services.catalog_create(
            actor=self.request.actor, model=serializer.Meta.model, **serializer.validated_data
        )

    def perform_update(self, serializer):
        serializer.instance = services.catalog_update(
            actor=self.request.actor, instance=serializer.instance, **serializer.validated_data
        )

    def perform_destroy(self, instance):
        services.catalog_delete(actor=self.request.actor, instance=instance)
