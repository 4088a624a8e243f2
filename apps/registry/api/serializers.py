from rest_framework import serializers

from apps.core.api.serializers import StrictModelSerializer
from apps.registry.models import Service, Subscription, Topic


class ServiceSerializer(StrictModelSerializer):
    class Meta:
        model = Service
        fields = ["id", "name", "description", "created_at"]
        read_only_fields = ["id", "created_at"]


class TopicSerializer(StrictModelSerializer):
    producers = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=Service.objects.all(), required=False
    )

    class Meta:
        model = Topic
        fields = ["id", "name", "description", "producers", "current_schema_version", "created_at"]
        read_only_fields = ["id", "current_schema_version", "created_at"]


class SubscriptionSerializer(StrictModelSerializer):
    consumer = serializers.SlugRelatedField(slug_field="name", queryset=Service.objects.all())
    topic = serializers.SlugRelatedField(slug_field="name", queryset=Topic.objects.all())

    class Meta:
        model = Subscription
        fields = [
            "id",
            "consumer",
            "topic",
            "transport",
            "endpoint",
            "secret_ref",
            "is_active",
            "consecutive_failures",
            "last_error",
            "last_delivered_at",
            "created_at",
        ]
        read_only_fields = [
            "id",
            "consecutive_failures",
            "last_error",
            "last_delivered_at",
            "created_at",
        ]
        validators = []  # the service checks uniqueness and webhook completeness


class SubscriptionUpdateSerializer(StrictModelSerializer):
    class Meta:
        model = Subscription
        fields = ["endpoint", "secret_ref", "is_active"]
