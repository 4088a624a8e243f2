from rest_framework import mixins, viewsets

from apps.core.api.permissions import OPERATOR, PLATFORM_SERVICE
from apps.core.api.views import StewardViewSetMixin
from apps.registry import selectors, services
from apps.registry.api import serializers
from apps.registry.filters import SubscriptionFilterSet, TopicFilterSet
from apps.registry.models import Service

PLATFORM = frozenset({OPERATOR, PLATFORM_SERVICE})


class ServiceViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.ServiceSerializer
    queryset = Service.objects.all()
    search_fields = ["name", "description"]
    ordering_fields = ["name"]
    ordering = "name"
    scope_app = "registry"
    steward_scope = "system"
    write_access = PLATFORM

    def perform_create(self, serializer):
        serializer.instance = services.service_ensure(
            actor=self.request.actor, **serializer.validated_data
        )


class TopicViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.TopicSerializer
    filterset_class = TopicFilterSet
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]
    ordering = "name"
    lookup_field = "name"
    lookup_value_regex = r"[a-z0-9_.]+"
    scope_app = "registry"
    steward_scope = "system"
    write_access = PLATFORM

    def get_queryset(self):
        return selectors.topic_list()

    def perform_create(self, serializer):
        serializer.instance = services.topic_create(
            actor=self.request.actor, **serializer.validated_data
        )


class SubscriptionViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Who consumes what, and how. Subscriptions are deactivated, not deleted: their
    dead letters and delivery history stay meaningful. Platform callers only: endpoints,
    secret references and errors are not for tenants to read."""

    serializer_class = serializers.SubscriptionSerializer
    filterset_class = SubscriptionFilterSet
    search_fields = ["consumer__name", "topic__name", "endpoint"]
    ordering_fields = ["created_at", "consecutive_failures"]
    ordering = "-id"
    scope_app = "registry"
    steward_scope = "system"
    read_access = PLATFORM
    write_access = PLATFORM

    def get_serializer_class(self):
        if self.action in ("update", "partial_update"):
            return serializers.SubscriptionUpdateSerializer
        return serializers.SubscriptionSerializer

    def get_queryset(self):
        return selectors.subscription_list()

    def perform_create(self, serializer):
        serializer.instance = services.subscription_create(
            actor=self.request.actor, **serializer.validated_data
        )

    def perform_update(self, serializer):
        serializer.instance = services.subscription_update(
            actor=self.request.actor, subscription=serializer.instance, **serializer.validated_data
        )
