from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import PLATFORM
from apps.core.api.rows import RowListMixin
from apps.core.api.views import StewardAccessMixin, StewardReadOnlyViewSet
from apps.eventing import selectors, services
from apps.eventing.api import serializers
from apps.eventing.filters import (
    DeadLetterFilterSet,
    RecentEventFilterSet,
    UncertainEffectFilterSet,
)


class OverviewView(StewardAccessMixin, APIView):
    """Outbox backlog and age, delivery rate per minute over the last hour, dead letters,
    inbox sizes per consumer and uncertain effects by state."""

    scope_app = "eventing"
    steward_scope = "system"
    read_access = PLATFORM

    @extend_schema(responses=serializers.OverviewSerializer)
    def get(self, request):
        return Response(serializers.OverviewSerializer(selectors.overview()).data)


class DeadLetterViewSet(StewardReadOnlyViewSet):
    serializer_class = serializers.DeadLetterSerializer
    filterset_class = DeadLetterFilterSet
    search_fields = ["error", "event_type", "topic"]
    ordering_fields = ["created_at", "id", "attempts"]
    ordering = "-id"
    scope_app = "eventing"
    steward_scope = "system"
    read_access = PLATFORM
    write_access = PLATFORM

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema's generator asks, no caller
            return selectors.dead_letter_list()
        return selectors.dead_letters_visible_to(self.request.actor)

    @extend_schema(request=None, responses=serializers.DeadLetterSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def replay(self, request, pk=None):
        """Deliver the envelope to its subscription once more. Conditional: a dead letter
        is replayed once; a second request answers 409 `dead_letter_resolved`."""
        dead = services.dead_letter_replay(actor=request.actor, dead_letter=self.get_object())
        return Response(self.get_serializer(dead).data)

    @extend_schema(request=None, responses=serializers.DeadLetterSerializer)
    @action(detail=True, methods=["post"])
    @idempotent
    def discard(self, request, pk=None):
        dead = services.dead_letter_discard(actor=request.actor, dead_letter=self.get_object())
        return Response(self.get_serializer(dead).data)


class UncertainEffectViewSet(StewardReadOnlyViewSet):
    serializer_class = serializers.UncertainEffectSerializer
    filterset_class = UncertainEffectFilterSet
    search_fields = ["external_ref", "last_error"]
    ordering_fields = ["created_at", "next_check_at", "id"]
    ordering = "-id"
    scope_app = "eventing"
    steward_scope = "system"
    read_access = PLATFORM

    def get_queryset(self):
        return selectors.uncertain_effect_list()


class RecentEventViewSet(RowListMixin, StewardReadOnlyViewSet):
    serializer_class = serializers.RecentEventSerializer
    row_shape = serializers.RECENT_EVENT_ROWS
    filterset_class = RecentEventFilterSet
    search_fields = ["aggregate_id", "event_type"]
    ordering_fields = ["received_at", "id"]
    ordering = "-id"
    lookup_field = "event_id"
    scope_app = "eventing"
    steward_scope = "system"
    read_access = PLATFORM

    def get_queryset(self):
        return selectors.recent_event_list()
