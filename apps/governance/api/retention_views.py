"""The retention API: rules (operators), legal holds (operators and the tenant's
admins), the preview of tonight's sweep, and the sweeps that ran."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import EVERYONE, OPERATOR, PLATFORM, TENANT_ADMIN
from apps.core.api.views import (
    ServiceWritesMixin,
    StewardAccessMixin,
    StewardReadOnlyViewSet,
    StewardViewSetMixin,
    tenant_for_write,
)
from apps.governance.api.retention_serializers import (
    LegalHoldSerializer,
    PlaceLegalHoldSerializer,
    ReleaseLegalHoldSerializer,
    RetentionRuleSerializer,
    RetentionSweepSerializer,
)
from apps.governance.retention import selectors, services
from apps.governance.retention.filters import (
    LegalHoldFilterSet,
    RetentionRuleFilterSet,
    RetentionSweepFilterSet,
)

GOVERNORS = frozenset({OPERATOR, TENANT_ADMIN})


class RetentionRuleViewSet(StewardViewSetMixin, ServiceWritesMixin, viewsets.ModelViewSet):
    """Retention rules. A locked rule takes a longer period and nothing else (409
    `retention_rule_locked`, naming what was refused)."""

    steward_scope = "system"
    scope_app = "governance"
    serializer_class = RetentionRuleSerializer
    filterset_class = RetentionRuleFilterSet
    search_fields = ["name"]
    ordering = "name"
    read_access = EVERYONE
    write_access = frozenset({OPERATOR})

    create_service = staticmethod(services.rule_create)
    update_service = staticmethod(services.rule_update)
    destroy_service = staticmethod(services.rule_delete)
    instance_kwarg = "rule"

    def get_queryset(self):
        return selectors.rule_list()


class LegalHoldViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Legal holds: a tenant's admins see and place their tenant's, operators every
    tenant's. Released holds stay listed (`?active=false`)."""

    steward_scope = "system"
    scope_app = "governance"
    serializer_class = LegalHoldSerializer
    filterset_class = LegalHoldFilterSet
    ordering = "-created_at"
    read_access = GOVERNORS | PLATFORM
    write_access = GOVERNORS

    def get_queryset(self):
        return selectors.hold_list()

    @extend_schema(request=PlaceLegalHoldSerializer, responses=LegalHoldSerializer)
    @idempotent
    def create(self, request, *args, **kwargs):
        payload = PlaceLegalHoldSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        hold = services.hold_place(
            actor=request.actor,
            tenant=tenant_for_write(request, data.get("tenant")),
            data_class=data.get("data_class"),
            store=data.get("store"),
            reason=data["reason"],
        )
        return Response(self.read_representation(hold), status=201)

    @extend_schema(request=ReleaseLegalHoldSerializer, responses=LegalHoldSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def release(self, request, pk=None):
        payload = ReleaseLegalHoldSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        hold = services.hold_release(
            actor=request.actor, hold=self.get_object(), reason=payload.validated_data["reason"]
        )
        return Response(self.read_representation(hold))


class RetentionSweepViewSet(StewardReadOnlyViewSet):
    """The nightly sweeps that ran: what each issued, held and purged."""

    steward_scope = "system"
    scope_app = "governance"
    serializer_class = RetentionSweepSerializer
    filterset_class = RetentionSweepFilterSet
    ordering = "-night"
    read_access = PLATFORM

    def get_queryset(self):
        return selectors.sweep_list()

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        context = self.get_serializer_context()
        context["purge_outcomes"] = selectors.purge_outcomes([sweep.night for sweep in page])
        return self.get_paginated_response(
            RetentionSweepSerializer(page, many=True, context=context).data
        )


class RetentionPreviewView(StewardAccessMixin, APIView):
    """What tonight's sweep would issue, hold and purge with the rules and holds as
    they are now. Changes nothing."""

    steward_scope = "system"
    scope_app = "governance"
    read_access = PLATFORM

    @extend_schema(responses=dict)
    def get(self, request):
        return Response(selectors.sweep_preview())
