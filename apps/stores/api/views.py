from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import (
    EVERYONE,
    OPERATOR,
    PLATFORM,
    PLATFORM_SERVICE,
    TENANT_ADMIN,
    TENANT_SERVICE,
)
from apps.core.api.views import (
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
    ServiceWritesMixin,
    StewardAccessMixin,
    StewardViewSetMixin,
    tenant_for_write,
)
from apps.stores import selectors, services
from apps.stores.api import serializers
from apps.stores.filters import (
    BenchmarkResultFilterSet,
    ContractTestResultFilterSet,
    MigrationPilotFilterSet,
    PhysicalizationPolicyFilterSet,
    ProfileCertificationFilterSet,
    ResidencyRuleFilterSet,
    StoreBindingFilterSet,
    StoreFilterSet,
    StoreProfileFilterSet,
)
from apps.tenancy.api.catalog import StewardCatalogViewSet


class BindingViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    """SetStoreBinding and the binding lifecycle, in the caller's tenant scope."""

    serializer_class = serializers.BindingSerializer
    filterset_class = StoreBindingFilterSet
    search_fields = ["store__slug", "status_reason"]
    ordering_fields = ["created_at", "status"]
    ordering = "-created_at"
    scope_app = "stores"
    read_access = EVERYONE
    write_access = frozenset({OPERATOR, PLATFORM_SERVICE, TENANT_ADMIN, TENANT_SERVICE})

    def get_queryset(self):
        return selectors.binding_list()

    def get_write_access(self):
        # Only provisioning (a platform service) or an operator reports migrations applied.
        if self.action == "migrations_applied":
            return PLATFORM
        # A residency exception is an operator's decision.
        if self.action == "grant_exception":
            return frozenset({OPERATOR})
        return self.write_access

    @extend_schema(
        request=serializers.SetBindingSerializer, responses=serializers.BindingSerializer
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        payload = serializers.SetBindingSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        binding = services.binding_set(
            actor=request.actor,
            tenant=tenant_for_write(request, data.get("tenant")),
            store=data["store"],
            profile=data["profile"],
            region=data["region"],
        )
        return Response(self.read_representation(binding), status=201)

    @extend_schema(request=None, responses=serializers.BindingSerializer)
    @action(detail=True, methods=["post"], url_path="migrations-applied")
    @idempotent
    def migrations_applied(self, request, pk=None):
        binding = services.binding_migrations_applied(
            actor=request.actor, binding=self.get_object()
        )
        return Response(self.read_representation(binding))

    @extend_schema(
        request=serializers.GrantExceptionSerializer, responses=serializers.BindingSerializer
    )
    @action(detail=True, methods=["post"], url_path="grant-exception")
    @idempotent
    def grant_exception(self, request, pk=None):
        """An operator's decision on a binding flagged for residency: an exception for
        this binding, with a reason and an expiry, audited; it ends by itself."""
        payload = serializers.GrantExceptionSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        binding = services.binding_grant_exception(
            actor=request.actor, binding=self.get_object(), **payload.validated_data
        )
        return Response(self.read_representation(binding))

    @extend_schema(request=serializers.RetireSerializer, responses=serializers.BindingSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def retire(self, request, pk=None):
        payload = serializers.RetireSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        binding = services.binding_retire(
            actor=request.actor, binding=self.get_object(), reason=payload.validated_data["reason"]
        )
        return Response(self.read_representation(binding))


class EvaluateView(StewardAccessMixin, APIView):
    """A dry run: what residency and workload gating would say, and why."""

    scope_app = "stores"
    # Operators ask about any tenant: their own acting tenant's scope would hide the
    # rules of the tenant asked about. Tenant callers stay in their scope.
    steward_scope = "system"

    read_access = EVERYONE
    read_only_post = True  # a read scope may ask: the POST changes nothing

    @extend_schema(request=serializers.EvaluateSerializer, responses=dict)
    def post(self, request):
        payload = serializers.EvaluateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        tenant = tenant_for_write(request, data.get("tenant"))
        return Response(
            selectors.what_if(
                tenant=tenant,
                store=data["store"],
                region=data["region"],
                profile=data.get("profile"),
            )
        )


class StoreViewSet(StewardCatalogViewSet):
    scope_app = "stores"
    lookup_field = "slug"
    serializer_class = serializers.StoreSerializer
    filterset_class = StoreFilterSet
    search_fields = ["slug", "name"]
    ordering = "slug"

    def get_queryset(self):
        return selectors.store_list()

    @extend_schema(
        responses=dict,
        parameters=[
            OpenApiParameter(
                "profile", str, description="A profile's slug; else every profile bound."
            )
        ],
    )
    @action(detail=True, methods=["get"])
    def checklist(self, request, slug=None):
        """The migration strategy's seven steps for this store, per profile, each with
        its state and exactly what it lacks."""
        store = self.get_object()
        wanted = request.query_params.get("profile")
        profiles = (
            selectors.profile_list().filter(slug=wanted)
            if wanted
            else selectors.checklist_profiles(store)
        )
        return Response(
            {"results": [selectors.migration_checklist(store, profile) for profile in profiles]}
        )


class ProfileViewSet(StewardCatalogViewSet):
    scope_app = "stores"
    lookup_field = "slug"
    serializer_class = serializers.ProfileSerializer
    filterset_class = StoreProfileFilterSet
    search_fields = ["slug", "name"]
    ordering = "slug"

    def get_queryset(self):
        return selectors.profile_list()


class CertificationViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    """Evidence records: who certified a profile for a workload, when, on which benchmark."""

    steward_scope = "system"
    serializer_class = serializers.CertificationSerializer
    filterset_class = ProfileCertificationFilterSet
    ordering = "-certified_at"
    scope_app = "stores"
    read_access = EVERYONE
    write_access = PLATFORM

    def get_queryset(self):
        return selectors.certification_list()

    def perform_create(self, serializer):
        serializer.instance = services.certification_record(
            actor=self.request.actor, **serializer.validated_data
        )

    @extend_schema(request=None, responses=serializers.CertificationSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def revoke(self, request, pk=None):
        record = services.certification_revoke(actor=request.actor, record=self.get_object())
        return Response(self.read_representation(record))


class EvidenceViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    """Workload evidence records: everyone reads; operators and platform services (the
    benchmark and CI runs) record. Records are never changed: a newer one supersedes."""

    steward_scope = "system"
    ordering = "-recorded_at"
    scope_app = "stores"
    read_access = EVERYONE
    write_access = PLATFORM
    record = None  # the service that records one

    def perform_create(self, serializer):
        serializer.instance = type(self).record(
            actor=self.request.actor, **serializer.validated_data
        )


class BenchmarkResultViewSet(EvidenceViewSet):
    """Benchmark results: a query shape on a provider (or a profile's declared
    indexes), its figure against its threshold, pass or fail, and the run."""

    serializer_class = serializers.BenchmarkResultSerializer
    filterset_class = BenchmarkResultFilterSet
    record = staticmethod(services.benchmark_record)

    def get_queryset(self):
        return selectors.benchmark_list()


class ContractTestResultViewSet(EvidenceViewSet):
    """Provider contract-test results: a contract on a provider, pass or fail, the run."""

    serializer_class = serializers.ContractTestResultSerializer
    filterset_class = ContractTestResultFilterSet
    record = staticmethod(services.contract_test_record)

    def get_queryset(self):
        return selectors.contract_test_list()


class PhysicalizationPolicyViewSet(EvidenceViewSet):
    """Physicalization policies of a profile for a workload, with rollback guidance."""

    serializer_class = serializers.PhysicalizationPolicySerializer
    filterset_class = PhysicalizationPolicyFilterSet
    record = staticmethod(services.policy_record)

    def get_queryset(self):
        return selectors.policy_list()


class MigrationPilotViewSet(EvidenceViewSet):
    """Migration pilots (the strategy's step 6): which runtime-adjacent store was piloted
    on which profile, when, and how it went."""

    serializer_class = serializers.MigrationPilotSerializer
    filterset_class = MigrationPilotFilterSet
    record = staticmethod(services.pilot_record)

    def get_queryset(self):
        return selectors.pilot_list()


class RuleViewSet(
    StewardViewSetMixin,
    ServiceWritesMixin,
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
    viewsets.ModelViewSet,
):
    """Residency rules. Saving one flags the bindings it makes non-compliant."""

    steward_scope = "system"
    serializer_class = serializers.RuleSerializer
    filterset_class = ResidencyRuleFilterSet
    ordering = "id"
    scope_app = "stores"
    read_access = EVERYONE
    write_access = frozenset({OPERATOR})

    create_service = staticmethod(services.rule_create)
    update_service = staticmethod(services.rule_update)
    destroy_service = staticmethod(services.rule_delete)
    instance_kwarg = "rule"

    def get_queryset(self):
        return selectors.rule_list()

    @extend_schema(request=serializers.RuleSerializer, responses=dict)
    @action(detail=False, methods=["post"])
    def preview(self, request):
        """The Provisioned and Active bindings the proposed rule (replacing the rule
        `?replacing=<id>` names, if any) would make non-compliant. Changes nothing."""
        payload = serializers.RuleSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        replacing = None
        if request.query_params.get("replacing", "").isdigit():
            replacing = self.get_queryset().filter(pk=request.query_params["replacing"]).first()
        affected = selectors.rule_preview(replacing=replacing, **payload.validated_data)
        return Response(
            {
                "affected": [
                    {
                        "binding_id": str(binding.pk),
                        "tenant": binding.tenant.slug,
                        "store": binding.store.slug,
                        "region": binding.region.slug,
                        "status": binding.status,
                        "explanation": verdict.explanation,
                    }
                    for binding, verdict in affected
                ]
            }
        )
