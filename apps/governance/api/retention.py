"""The retention API: rules (operators), legal holds (operators and the tenant's
admins), the preview of tonight's sweep, and the sweeps that ran."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import EVERYONE, OPERATOR, PLATFORM, TENANT_ADMIN
from apps.core.api.serializers import StrictModelSerializer, StrictSerializer
from apps.core.api.views import (
    StewardAccessMixin,
    StewardReadOnlyViewSet,
    StewardViewSetMixin,
    tenant_for_write,
)
from apps.governance import retention_selectors as selectors
from apps.governance import retention_services as services
from apps.governance.models import LegalHold, RetentionRule, RetentionSweep
from apps.stores.models import Store
from apps.tenancy.models import DataClass, Tenant

GOVERNORS = frozenset({OPERATOR, TENANT_ADMIN})


def slug_of(model, **kwargs):
    return serializers.SlugRelatedField(slug_field="slug", queryset=model.objects.all(), **kwargs)


class RetentionRuleSerializer(StrictModelSerializer):
    data_class = slug_of(DataClass, required=False, allow_null=True)
    store = slug_of(Store, required=False, allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = RetentionRule
        fields = [
            "id",
            "name",
            "data_class",
            "store",
            "period_days",
            "action",
            "locked",
            "enabled",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_by", "created_at", "updated_at"]
        # The service says what is wrong with a rule (and a locked rule's refusals),
        # with stable codes; the model's own validators would answer first, vaguer.
        validators = []
        extra_kwargs = {"name": {"validators": []}, "period_days": {"min_value": 1}}


class LegalHoldSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # Null when the hold is wider (a data class, or the whole tenant) or not released.
    data_class = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    store = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    released_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    active = serializers.BooleanField(read_only=True)
    scope = serializers.CharField(source="scope_label", read_only=True)

    class Meta:
        model = LegalHold
        fields = [
            "id",
            "tenant",
            "data_class",
            "store",
            "scope",
            "reason",
            "active",
            "created_by",
            "created_at",
            "released_at",
            "released_by",
            "release_reason",
        ]
        read_only_fields = fields


class PlaceLegalHoldSerializer(StrictSerializer):
    tenant = slug_of(
        Tenant, required=False, help_text="For operators; a tenant's admins hold their own."
    )
    data_class = slug_of(DataClass, required=False, allow_null=True)
    store = slug_of(Store, required=False, allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class ReleaseLegalHoldSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True)


class RetentionSweepSerializer(StrictModelSerializer):
    purge_tasks_now = serializers.SerializerMethodField(
        help_text="The night's purge tasks by status now; receipts complete them."
    )

    class Meta:
        model = RetentionSweep
        fields = [
            "id",
            "night",
            "as_of",
            "started_at",
            "finished_at",
            "status",
            "runs",
            "results",
            "purge_tasks_now",
            "error",
        ]
        read_only_fields = fields

    def get_purge_tasks_now(self, sweep) -> dict[str, int]:
        outcomes = self.context.get("purge_outcomes")
        if outcomes is None:  # one sweep: ask for it alone
            outcomes = selectors.purge_outcomes([sweep.night])
        return outcomes.get(sweep.night.isoformat(), {})


class RetentionRuleViewSet(StewardViewSetMixin, viewsets.ModelViewSet):
    """Retention rules. A locked rule takes a longer period and nothing else (409
    `retention_rule_locked`, naming what was refused)."""

    steward_scope = "system"
    scope_app = "governance"
    serializer_class = RetentionRuleSerializer
    filterset_fields = ["action", "locked", "enabled", "data_class__slug", "store__slug"]
    search_fields = ["name"]
    ordering = "name"
    read_access = EVERYONE
    write_access = frozenset({OPERATOR})

    def get_queryset(self):
        return selectors.rule_list()

    def perform_create(self, serializer):
        serializer.instance = services.rule_create(
            actor=self.request.actor, **serializer.validated_data
        )

    def perform_update(self, serializer):
        serializer.instance = services.rule_update(
            actor=self.request.actor, rule=serializer.instance, **serializer.validated_data
        )

    def perform_destroy(self, instance):
        services.rule_delete(actor=self.request.actor, rule=instance)


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
    filterset_fields = {"tenant__slug": ["exact"], "released_at": ["isnull"]}
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
    queryset = RetentionSweep.objects.all()
    filterset_fields = ["status"]
    ordering = "-night"
    read_access = PLATFORM

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
