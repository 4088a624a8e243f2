from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from apps.assets import selectors, services
from apps.assets.api import serializers
from apps.assets.filters import AssetFilterSet
from apps.assets.models import Asset
from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import (
    EVERYONE,
    OPERATOR,
    TENANT_ADMIN,
    TENANT_MEMBER,
    TENANT_SERVICE,
    caller_kind,
)
from apps.core.api.rows import RowListMixin
from apps.core.api.views import (
    IdempotentCreateMixin,
    ServiceWritesMixin,
    StewardViewSetMixin,
)
from apps.core.codes import CoreCode
from apps.core.errors import ValidationFailed


class AssetViewSet(
    RowListMixin,
    StewardViewSetMixin,
    ServiceWritesMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Assets of the tenant the caller acts for, their approval and their lifecycle:
    PATCH of name and description (not while Requested), DELETE of a Draft, retire of
    an Approved asset or a withdrawn request."""

    serializer_class = serializers.AssetSerializer
    row_shape = serializers.ASSET_ROWS
    queryset = Asset.objects.none()
    filterset_class = AssetFilterSet
    search_fields = ["name", "description"]
    ordering_fields = ["created_at", "name", "status"]
    ordering = "-created_at"
    scope_app = "assets"
    read_access = EVERYONE
    # Members may create and request; deciding is checked per object (see _decide).
    write_access = frozenset({OPERATOR, TENANT_ADMIN, TENANT_MEMBER, TENANT_SERVICE})
    update_service = staticmethod(services.asset_update)
    destroy_service = staticmethod(services.asset_delete)
    instance_kwarg = "asset"

    def get_serializer_class(self):
        if self.action == "partial_update":
            return serializers.AssetUpdateSerializer
        return serializers.AssetSerializer

    # PATCH only: with no `update` the router gives PUT no route, since a PUT would
    # restate fields the asset's lifecycle owns. Answered in the read shape.
    def partial_update(self, request, *args, **kwargs):
        """Change the asset's name or description; refused while it is Requested."""
        serializer = self.get_serializer(self.get_object(), data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        self.perform_update(serializer)
        return Response(self.read_representation(serializer.instance))

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        # Naming the caller's tenant lets its own indexes serve the page (see asset_list).
        return selectors.asset_list(tenant=self.request.tenant)

    def perform_create(self, serializer):
        if self.request.tenant is None:
            raise ValidationFailed(
                "Choose the tenant to act for before creating assets.",
                code=CoreCode.TENANT_REQUIRED,
            )
        serializer.instance = services.asset_create(
            actor=self.request.actor, tenant=self.request.tenant, **serializer.validated_data
        )

    @extend_schema(
        request=serializers.RequestApprovalSerializer, responses=serializers.AssetSerializer
    )
    @action(detail=True, methods=["post"], url_path="request-approval")
    @idempotent
    def request_approval(self, request, pk=None):
        payload = serializers.RequestApprovalSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        asset = services.asset_request_approval(
            actor=request.actor,
            asset=self.get_object(),
            delegate=payload.validated_data["delegate"],
        )
        return Response(self.read_representation(asset))

    def _object_to_decide(self, request, act: str) -> Asset:
        asset = self.get_object()
        if not selectors.may_decide(request.user, asset, caller_kind=caller_kind(request)):
            raise PermissionDenied(f"{act} needs the approve_asset permission on this asset.")
        return asset

    def _decide(self, request, *, approve: bool):
        payload = serializers.DecisionSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        asset = self._object_to_decide(request, "Deciding")
        asset = services.asset_decide(
            actor=request.actor,
            asset=asset,
            approve=approve,
            reason=payload.validated_data["reason"],
        )
        return Response(self.read_representation(asset))

    @extend_schema(request=serializers.DecisionSerializer, responses=serializers.AssetSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def approve(self, request, pk=None):
        return self._decide(request, approve=True)

    @extend_schema(request=serializers.DecisionSerializer, responses=serializers.AssetSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def reject(self, request, pk=None):
        return self._decide(request, approve=False)

    @extend_schema(request=serializers.AssetRetireSerializer, responses=serializers.AssetSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def retire(self, request, pk=None):
        payload = serializers.AssetRetireSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        # Retiring undoes an approval or withdraws a request: whoever may decide the
        # asset may retire it.
        asset = self._object_to_decide(request, "Retiring")
        asset = services.asset_retire(
            actor=request.actor, asset=asset, reason=payload.validated_data["reason"]
        )
        return Response(self.read_representation(asset))

    @extend_schema(responses=serializers.CallbackReceiptSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def callbacks(self, request, pk=None):
        """Every callback receipt of the asset, across all its workflow instances (the
        latest 500)."""
        receipts = selectors.callbacks_of(self.get_object())[:500]
        return Response(serializers.CallbackReceiptSerializer(receipts, many=True).data)
