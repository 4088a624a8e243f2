from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import PLATFORM
from apps.core.api.schema import ProblemSerializer
from apps.core.api.views import (
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
    ServiceWritesMixin,
    StewardAccessMixin,
    StewardViewSetMixin,
)
from apps.registry import selectors, services, versions
from apps.registry.api import serializers
from apps.registry.filters import SchemaVersionFilterSet, SubscriptionFilterSet, TopicFilterSet


class ServiceViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.ServiceSerializer
    search_fields = ["name", "description"]
    ordering_fields = ["name"]
    ordering = "name"
    scope_app = "registry"
    steward_scope = "system"
    write_access = PLATFORM

    def get_queryset(self):
        return selectors.service_list()

    def perform_create(self, serializer):
        serializer.instance = services.service_register(
            actor=self.request.actor, **serializer.validated_data
        )


class TopicViewSet(
    StewardViewSetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    viewsets.GenericViewSet,
):
    serializer_class = serializers.TopicSerializer
    filterset_class = TopicFilterSet
    search_fields = ["name", "description"]
    ordering_fields = ["name", "created_at"]
    ordering = "name"
    lookup_field = "name"
    lookup_value_regex = r"[a-zA-Z0-9._-]+"  # any Kafka topic name, as Topic allows
    scope_app = "registry"
    steward_scope = "system"
    write_access = PLATFORM

    def get_queryset(self):
        return selectors.topic_list()

    def perform_create(self, serializer):
        serializer.instance = services.topic_create(
            actor=self.request.actor, **serializer.validated_data
        )

    @extend_schema(
        methods=["get"], request=None, responses=serializers.ReaderSchemaSerializer(many=True)
    )
    @extend_schema(
        methods=["post"],
        request=serializers.ReaderDeclareSerializer,
        responses={
            201: dict,
            (422, "application/problem+json"): OpenApiResponse(
                ProblemSerializer,
                description="A reader refused: invalid_reader_schema, "
                "invalid_schema_reference, not_a_consumer or service_required.",
            ),
        },
    )
    # One reader per consumer and role: as many as the topic has consumers, so neither
    # paged nor filtered like the topic list this hangs from.
    @action(detail=True, methods=["get", "post"], pagination_class=None, filter_backends=[])
    def readers(self, request, name=None):
        """The reader schema in force for each consumer of the topic (GET), or a consumer's
        release declaring the one it reads with (POST): the version waiting on the topic
        is judged again for that consumer, and the answer says how."""
        topic = self.get_object()
        if request.method == "GET":
            found = selectors.readers_in_force(topic, request.query_params.get("role"))
            return Response(serializers.ReaderSchemaSerializer(found, many=True).data)
        payload = serializers.ReaderDeclareSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        reader, waiting = versions.reader_declare(
            actor=request.actor,
            service=versions.reader_service(actor=request.actor, named=data.get("service")),
            topic=topic,
            release=data["release"],
            schema=data["schema"],
            schema_type=data["schema_type"],
            role=data["role"],
            references=data.get("references"),
        )
        answer = {"reader": serializers.ReaderSchemaSerializer(reader).data, "waiting": None}
        if waiting is not None:
            answer["waiting"] = serializers.SchemaVersionSerializer(
                waiting, context=self.get_serializer_context()
            ).data
        return Response(answer, status=201)

    @extend_schema(request=serializers.TopicPolicySerializer, responses=serializers.TopicSerializer)
    @action(detail=True, methods=["put"], url_path="compatibility-policy")
    def compatibility_policy(self, request, name=None):
        """Change the topic's compatibility policy: its producers and operators, as its
        level. It applies to the versions submitted from now on; a version waiting for
        acknowledgement keeps its verdict."""
        topic = self.get_object()
        payload = serializers.TopicPolicySerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        topic = versions.set_policy(
            actor=request.actor, topic=topic, policy=payload.validated_data["compatibility_policy"]
        )
        return Response(serializers.TopicSerializer(topic).data)


class SubscriptionViewSet(
    StewardViewSetMixin,
    ServiceWritesMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    IdempotentCreateMixin,
    ReadShapeUpdateMixin,
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

    create_service = staticmethod(services.subscription_create)
    update_service = staticmethod(services.subscription_update)
    instance_kwarg = "subscription"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema's generator asks, no caller
            return selectors.subscription_list()
        return selectors.subscriptions_visible_to(self.request.actor)


class ModelSyncView(StewardAccessMixin, APIView):
    """A release's ModelSync: per topic published, unchanged, awaiting acknowledgement
    (with the consumers that must act) or rejected (with the reason). The same release
    again answers the same; a different model under the same release is 409."""

    scope_app = "registry"
    steward_scope = "system"
    read_access = PLATFORM
    write_access = PLATFORM

    @extend_schema(request=serializers.ModelSyncSerializer, responses=dict)
    def post(self, request):
        payload = serializers.ModelSyncSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        answer = versions.model_sync(
            actor=request.actor,
            service=services.service_for_caller(actor=request.actor, named=data.get("service")),
            release=data["release"],
            topics=data["topics"],
            reads=data.get("reads"),
        )
        return Response(answer)


class SchemaVersionViewSet(StewardViewSetMixin, viewsets.ReadOnlyModelViewSet):
    """Schema versions, and the acknowledgements breaking ones wait for."""

    serializer_class = serializers.SchemaVersionSerializer
    filterset_class = SchemaVersionFilterSet
    ordering = "-created_at"
    scope_app = "registry"
    steward_scope = "system"
    write_access = PLATFORM

    def get_queryset(self):
        return selectors.schema_version_list()

    @staticmethod
    def _consumer(request):
        payload = serializers.AcknowledgeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return payload.validated_data["consumer"]

    @extend_schema(
        request=serializers.AcknowledgeSerializer, responses=serializers.SchemaVersionSerializer
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def acknowledge(self, request, pk=None):
        version = versions.acknowledge(
            actor=request.actor, version=self.get_object(), consumer=self._consumer(request)
        )
        return Response(self.read_representation(version))

    @extend_schema(
        request=serializers.AcknowledgeSerializer, responses=serializers.SchemaVersionSerializer
    )
    @action(detail=True, methods=["post"], url_path="withdraw-acknowledgement")
    @idempotent
    def withdraw_acknowledgement(self, request, pk=None):
        version = versions.withdraw_acknowledgement(
            actor=request.actor, version=self.get_object(), consumer=self._consumer(request)
        )
        return Response(self.read_representation(version))

    @extend_schema(
        request=serializers.OverrideSerializer, responses=serializers.SchemaVersionSerializer
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def override(self, request, pk=None):
        # Before the body is read: a caller who may not override is told so, not what
        # its body lacks (versions.override checks it again, for every way in).
        versions.require_may_override(request.actor)
        payload = serializers.OverrideSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        version = versions.override(
            actor=request.actor, version=self.get_object(), reason=payload.validated_data["reason"]
        )
        return Response(self.read_representation(version))

    @extend_schema(
        request=serializers.WithdrawSerializer, responses=serializers.SchemaVersionSerializer
    )
    @action(detail=True, methods=["post"])
    @idempotent
    def withdraw(self, request, pk=None):
        """The producer (or an operator) takes a waiting version back."""
        # Read through a serializer as every other body is: one that is not an object,
        # or whose reason holds a NUL, is bad input (400), never a 500.
        payload = serializers.WithdrawSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        version = versions.withdraw_version(
            actor=request.actor,
            version=self.get_object(),
            reason=payload.validated_data.get("reason", ""),
        )
        return Response(self.read_representation(version))

    @extend_schema(request=None, responses=dict)
    @action(detail=True, methods=["post"])
    def remind(self, request, pk=None):
        return Response(
            {"reminded": versions.remind(actor=request.actor, version=self.get_object())}
        )
