from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import EVERYONE, OPERATOR, PLATFORM, TENANT_ADMIN
from apps.core.api.views import (
    IdempotentCreateMixin,
    StewardAccessMixin,
    StewardViewSetMixin,
    tenant_for_write,
)
from apps.core.errors import NotFound
from apps.core.middleware import bounds_its_own_body
from apps.core.view_scope import governance_work
from apps.governance.api import serializers
from apps.governance.orders import evidence, exports, selectors, services
from apps.governance.orders.filters import OrderFilterSet, OwnerTaskFilterSet

GOVERNORS = frozenset({OPERATOR, TENANT_ADMIN})
UUID = "[0-9a-fA-F-]{36}"


class OrderViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    """Tenant deletion and export orders: requested by a tenant's admin, approved by
    others (two for a production tenant), run in phases, proven by their evidence."""

    serializer_class = serializers.OrderSerializer
    lookup_value_regex = UUID
    filterset_class = OrderFilterSet
    ordering_fields = ["created_at", "status"]
    ordering = "-created_at"
    scope_app = "governance"
    steward_scope = "system"  # operators see every tenant's orders
    read_access = GOVERNORS
    write_access = GOVERNORS

    def get_queryset(self):
        return selectors.order_list()

    @extend_schema(
        request=serializers.OrderRequestSerializer, responses={201: serializers.OrderSerializer}
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        payload = serializers.OrderRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        order = services.order_request(
            actor=request.actor,
            tenant=tenant_for_write(request, data.get("tenant")),
            kind=data["kind"],
            reason=data["reason"],
        )
        return Response(self.read_representation(order), status=201)

    def _decide(self, request, approve: bool):
        payload = serializers.CommentSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        order = services.order_decide(
            actor=request.actor,
            order=self.get_object(),
            approve=approve,
            comment=payload.validated_data["comment"],
        )
        return Response(self.read_representation(order))

    @extend_schema(request=serializers.CommentSerializer, responses=serializers.OrderSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def approve(self, request, pk=None):
        return self._decide(request, approve=True)

    @extend_schema(request=serializers.CommentSerializer, responses=serializers.OrderSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def reject(self, request, pk=None):
        return self._decide(request, approve=False)

    @extend_schema(request=serializers.ReasonSerializer, responses=serializers.OrderSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def cancel(self, request, pk=None):
        payload = serializers.ReasonSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        order = services.order_cancel(
            actor=request.actor, order=self.get_object(), reason=payload.validated_data["reason"]
        )
        return Response(self.read_representation(order))

    @extend_schema(responses=serializers.EvidenceDocumentSerializer)
    @action(detail=True, methods=["get"])
    def evidence(self, request, pk=None):
        """The order's hash-chained evidence as one JSON document (see verify)."""
        order = self.get_object()
        response = Response(evidence.document(order))
        response["Content-Disposition"] = f'attachment; filename="evidence-{order.pk}.json"'
        return response

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        """The export archive (a ZIP with manifest.json), while it has not expired."""
        order = self.get_object()
        artifact = selectors.export_artifact_of(order)
        if artifact is None or not artifact.available:
            raise NotFound("This order has no archive to download (none yet, or expired).")
        # From PostgreSQL a chunk at a time: whichever web process answers serves it.
        response = StreamingHttpResponse(
            exports.export_archive_stream(artifact), content_type="application/zip"
        )
        response["Content-Length"] = str(artifact.size)
        response["Content-Disposition"] = content_disposition_header(
            True, artifact.path.rsplit("/", 1)[-1]
        )
        return response


@governance_work  # changes nothing: open whatever the caller's tenant's status
class VerifyEvidenceView(StewardAccessMixin, APIView):
    """Check an evidence document's chain: anyone holding it can, and so can Steward."""

    scope_app = "governance"
    read_access = EVERYONE
    read_only_post = True  # a read scope may ask: the POST changes nothing

    @extend_schema(
        request=serializers.EvidenceDocumentSerializer,
        responses=serializers.VerificationSerializer,
    )
    def post(self, request):
        payload = serializers.EvidenceDocumentSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        valid, first_bad = evidence.verify(request.data)
        return Response(
            {
                "valid": valid,
                "first_bad_entry": first_bad,
                "final_digest": payload.validated_data["final_digest"],
            }
        )


# Owners finish the tasks of a deletion or export while the tenant is suspended or
# offboarding: the order cannot complete without their receipts and bundles.
@governance_work
class OwnerTaskViewSet(
    StewardViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Governance tasks as their owners see them: a service's token lists and answers
    its own (acknowledge, complete with a receipt, fail, decline an export, upload an
    export bundle); operators see all and retry failed ones."""

    serializer_class = serializers.TaskSerializer
    lookup_value_regex = UUID
    filterset_class = OwnerTaskFilterSet
    ordering_fields = ["issued_at", "due_at"]
    ordering = "due_at"
    scope_app = "governance"
    steward_scope = "system"
    read_access = frozenset({*PLATFORM, TENANT_ADMIN})
    write_access = PLATFORM

    def get_queryset(self):
        account = getattr(self.request, "service_account", None)  # None for the schema
        return selectors.owner_task_list(owner=account.name if account is not None else None)

    def _answer(self, task):
        return Response(self.read_representation(task))

    @extend_schema(request=None, responses=serializers.TaskSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def acknowledge(self, request, pk=None):
        return self._answer(
            services.owner_task_acknowledge(actor=request.actor, task_id=self.get_object().pk)
        )

    @extend_schema(request=serializers.ReceiptSerializer, responses=serializers.TaskSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def complete(self, request, pk=None):
        payload = serializers.ReceiptSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        task = services.owner_task_complete(
            actor=request.actor, task_id=self.get_object().pk, receipt=payload.validated_data
        )
        return self._answer(task)

    @extend_schema(request=serializers.ReasonSerializer, responses=serializers.TaskSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def fail(self, request, pk=None):
        return self._with_reason(request, services.owner_task_fail)

    @extend_schema(request=serializers.ReasonSerializer, responses=serializers.TaskSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def decline(self, request, pk=None):
        return self._with_reason(request, services.owner_task_decline)

    def _with_reason(self, request, settle):
        payload = serializers.ReasonSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        task = settle(
            actor=request.actor,
            task_id=self.get_object().pk,
            reason=payload.validated_data["reason"],
        )
        return self._answer(task)

    @extend_schema(request=None, responses=serializers.TaskSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def retry(self, request, pk=None):
        return self._answer(
            services.owner_task_retry(actor=request.actor, task_id=self.get_object().pk)
        )

    @extend_schema(
        request={media_type: OpenApiTypes.BINARY for media_type in exports.MEDIA_TYPES},
        parameters=[
            OpenApiParameter(
                "Content-SHA256",
                str,
                OpenApiParameter.HEADER,
                required=True,
                description="The bundle's SHA-256, 64 hex digits.",
            ),
        ],
        responses=serializers.TaskSerializer,
    )
    @action(detail=True, methods=["put"])
    @bounds_its_own_body  # STEWARD_EXPORT_BUNDLE_MAX_BYTES, as it streams in
    def bundle(self, request, pk=None):
        """An export bundle as the request body, its format the Content-Type (JSON Lines,
        Parquet or Markdown): streamed, size-limited, checked against the declared
        SHA-256 and read back. Completes the task."""
        length = request.META.get("CONTENT_LENGTH")
        # Not get_object(): that would lock the task's row for the whole upload; the
        # service checks the caller owns the task before reading the body.
        task = exports.export_bundle_receive(
            actor=request.actor,
            task_id=self.kwargs["pk"],
            stream=request._request,
            fmt=exports.MEDIA_TYPES.get(request.content_type, ""),
            sha256=request.headers.get("Content-SHA256", ""),
            length=int(length) if length and length.isdigit() else None,
        )
        return self._answer(task)
