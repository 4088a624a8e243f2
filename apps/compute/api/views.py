from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from apps.compute import selectors, services
from apps.compute.api import serializers
from apps.compute.filters import ComputeBatchFilterSet
from apps.compute.models import ComputeBatch
from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import (
    OPERATOR,
    PLATFORM_SERVICE,
    TENANT_ADMIN,
    TENANT_SERVICE,
)
from apps.core.api.views import ReadShapeUpdateMixin, StewardViewSetMixin, tenant_for_write


class ComputeBatchViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    ReadShapeUpdateMixin,
    viewsets.GenericViewSet,
):
    """Compute batches. The workflow engine submits them (`submit_compute`), compute
    workers report their status; a terminal status completes the waiting step."""

    serializer_class = serializers.ComputeBatchSerializer
    queryset = ComputeBatch.objects.none()
    filterset_class = ComputeBatchFilterSet
    search_fields = ["workflow_instance_id", "workflow_step_id", "idempotency_key"]
    ordering_fields = ["created_at", "finished_at"]
    ordering = "-created_at"
    scope_app = "compute"
    read_access = frozenset({OPERATOR, TENANT_ADMIN, PLATFORM_SERVICE, TENANT_SERVICE})
    write_access = frozenset({PLATFORM_SERVICE, TENANT_SERVICE})
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        return selectors.batch_list()

    def get_serializer_class(self):
        if self.action == "partial_update":
            return serializers.BatchStatusSerializer
        return self.serializer_class

    @extend_schema(
        request=serializers.BatchSubmitSerializer, responses=serializers.ComputeBatchSerializer
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        payload = serializers.BatchSubmitSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = dict(payload.validated_data)
        tenant = tenant_for_write(request, data.pop("tenant", None))
        batch, created = services.batch_submit(actor=request.actor, tenant=tenant, **data)
        answer = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(self.read_representation(batch), status=answer)

    @extend_schema(
        request=serializers.BatchStatusSerializer, responses=serializers.ComputeBatchSerializer
    )
    def partial_update(self, request, *args, **kwargs):
        # A status report always names the status: the body is validated whole, not as
        # a partial update (an empty PATCH answered 500).
        return self.update(request, *args, **kwargs)

    def perform_update(self, serializer):
        serializer.instance = services.batch_set_status(
            actor=self.request.actor, batch=serializer.instance, **serializer.validated_data
        )
