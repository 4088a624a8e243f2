from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import (
    OPERATOR,
    PLATFORM,
    PLATFORM_SERVICE,
    TENANT_ADMIN,
    TENANT_SERVICE,
    IsAuthenticatedCaller,
    caller_kind,
)
from apps.core.api.rows import RowListMixin
from apps.core.api.views import (
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
    StewardReadOnlyViewSet,
    StewardViewSetMixin,
)
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import NotFound, ValidationFailed
from apps.core.view_scope import unscoped
from apps.tenancy import selectors, services
from apps.tenancy.api import serializers
from apps.tenancy.api.catalog import StewardCatalogViewSet
from apps.tenancy.codes import TenancyCode
from apps.tenancy.filters import AuditEventFilterSet, MembershipFilterSet, TenantFilterSet
from apps.tenancy.models import Tenant


class TenantViewSet(
    RowListMixin,
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
    viewsets.GenericViewSet,
):
    """Tenants. Operators and platform services create and change them; tenants are
    never deleted here (offboarding is a governance order)."""

    serializer_class = serializers.TenantSerializer
    row_shape = serializers.TENANT_ROWS
    queryset = Tenant.objects.none()  # for the schema; get_queryset() decides
    # Creating a tenant writes in the new tenant's scope: platform callers work in the
    # system scope here even while they act for a tenant (the list still follows it).
    steward_scope = "system"
    filterset_class = TenantFilterSet
    search_fields = ["slug", "name"]
    ordering_fields = ["slug", "name", "created_at"]
    ordering = "slug"
    scope_app = "tenancy"
    write_access = PLATFORM

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.queryset
        return selectors.tenants_visible_to(
            platform_wide=self.request.platform_wide, tenant=self.request.tenant
        )

    def perform_create(self, serializer):
        serializer.instance = services.tenant_create(
            actor=self.request.actor, **serializer.validated_data
        )

    def perform_update(self, serializer):
        serializer.instance = services.tenant_update(
            actor=self.request.actor, tenant=serializer.instance, **serializer.validated_data
        )


class MembershipViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Members of the tenant the caller acts for (all tenants' for platform callers)."""

    serializer_class = serializers.MembershipSerializer
    filterset_class = MembershipFilterSet
    search_fields = ["user__username", "tenant__slug"]
    ordering_fields = ["created_at", "role"]
    ordering = "-created_at"
    scope_app = "tenancy"
    write_access = frozenset({OPERATOR, TENANT_ADMIN, PLATFORM_SERVICE})

    def get_queryset(self):
        return selectors.membership_list()

    @extend_schema(
        request=serializers.MembershipWriteSerializer,
        responses={202: serializers.InvitationSentSerializer},
    )
    @idempotent
    def create(self, request, *args, **kwargs):
        """Invite a person: they join when they accept (`/tenancy/invitations/`). The
        answer is the same whether the username exists or not."""
        if request.tenant is None:
            raise ValidationFailed(
                "Choose the tenant to act for before adding members.", code=CoreCode.TENANT_REQUIRED
            )
        payload = serializers.MembershipWriteSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        username, role = payload.validated_data["username"], payload.validated_data["role"]
        services.membership_invite(
            actor=request.actor,
            tenant=request.tenant,
            username=username,
            role=role,
            by_operator=caller_kind(request) == OPERATOR,
        )
        answer = {
            "tenant": request.tenant.slug,
            "username": username,
            "role": role,
            "detail": "Invited, if such a person may join: they become a member on accepting.",
        }
        return Response(answer, status=status.HTTP_202_ACCEPTED)

    def perform_destroy(self, instance):
        services.membership_remove(actor=self.request.actor, membership=instance)


class IsPerson(BasePermission):
    """A person signed in (a session, not a service's token)."""

    def has_permission(self, request, view):
        if not request.user.is_authenticated:
            raise exceptions.NotAuthenticated()
        return getattr(request, "service_account", None) is None


# Outside the request scope: the invitations come from other tenants than the one the
# person acts for, which that scope would hide; the services open each tenant's scope.
@unscoped
class InvitationViewSet(viewsets.GenericViewSet):
    """The invitations waiting on the person calling, from any tenant: they accept or
    decline each. Only people have invitations; services have none to answer."""

    serializer_class = serializers.InvitationSerializer
    permission_classes = [IsPerson]
    pagination_class = None
    filter_backends: list = []
    lookup_value_regex = r"[0-9]+"

    def get_queryset(self):  # for the schema; reads go through the selectors below
        return selectors.membership_list(include_pending=True).none()

    def _invitation(self, pk):
        found = selectors.invitation_of(self.request.user, int(pk))
        if found is None:
            raise NotFound("No such invitation.", code=TenancyCode.INVITATION_NOT_FOUND)
        return found

    def list(self, request):
        invitations = selectors.invitations_of(request.user)
        return Response(self.get_serializer(invitations, many=True).data)

    @extend_schema(request=None, responses=serializers.MembershipSerializer)
    @action(detail=True, methods=["post"])
    def accept(self, request, pk=None):
        membership = services.membership_accept(
            actor=Actor(user=request.user), membership=self._invitation(pk)
        )
        return Response(serializers.MembershipSerializer(membership).data)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def decline(self, request, pk=None):
        services.membership_decline(actor=Actor(user=request.user), membership=self._invitation(pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RegionViewSet(StewardCatalogViewSet):
    """Regions: everyone reads; operators and platform services add and change them."""

    serializer_class = serializers.RegionSerializer
    queryset = selectors.region_list()
    search_fields = ["slug", "name"]
    ordering_fields = ["slug"]
    ordering = "slug"
    scope_app = "tenancy"


class DataClassViewSet(StewardReadOnlyViewSet):
    serializer_class = serializers.DataClassSerializer
    queryset = selectors.data_class_list()
    search_fields = ["slug", "name"]
    ordering_fields = ["slug"]
    ordering = "slug"
    scope_app = "tenancy"


class AuditEventViewSet(StewardReadOnlyViewSet):
    """The audit trail of the caller's scope, newest first."""

    serializer_class = serializers.AuditEventSerializer
    filterset_class = AuditEventFilterSet
    search_fields = ["object_repr", "actor_label", "action"]
    ordering_fields = ["occurred_at", "id"]
    ordering = "-id"
    scope_app = "tenancy"
    read_access = frozenset({OPERATOR, TENANT_ADMIN, PLATFORM_SERVICE, TENANT_SERVICE})

    def get_queryset(self):
        return selectors.audit_event_list()


class WhoAmIView(APIView):
    """Who the API thinks you are: handy for checking a token before wiring it in."""

    permission_classes = [IsAuthenticatedCaller]

    @extend_schema(responses=serializers.WhoAmISerializer)
    def get(self, request):
        account = request.service_account
        data = {
            "kind": "service" if account else "user",
            "name": account.name if account else request.user.get_username(),
            "tenant": request.tenant.slug if request.tenant else None,
            "platform_wide": request.platform_wide,
            "scopes": request.api_token.scopes if account else [],
        }
        return Response(serializers.WhoAmISerializer(data).data)
