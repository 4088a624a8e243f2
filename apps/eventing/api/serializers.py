from rest_framework import serializers

from apps.core.api.rows import RowShape
from apps.core.api.serializers import StrictModelSerializer, StrictSerializer
from apps.core.counting import COUNTED_EXACTLY
from apps.eventing.models import DeadLetter, RecentEvent, UncertainEffect


class DeadLetterSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    consumer = serializers.CharField(source="subscription.consumer.name", read_only=True)
    transport = serializers.CharField(source="subscription.transport", read_only=True)

    class Meta:
        model = DeadLetter
        fields = [
            "id",
            "subscription",
            "consumer",
            "transport",
            "event_id",
            "topic",
            "event_type",
            "tenant",
            "envelope",
            "error",
            "attempts",
            "state",
            "created_at",
            "resolved_at",
            "resolved_by",
        ]
        read_only_fields = fields


class UncertainEffectSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = UncertainEffect
        fields = [
            "id",
            "tenant",
            "actor",
            "event_id",
            "target_system",
            "operation",
            "external_ref",
            "state",
            "attempts",
            "next_check_at",
            "last_error",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class RecentEventSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = RecentEvent
        fields = [
            "event_id",
            "topic",
            "event_type",
            "tenant",
            "aggregate_type",
            "aggregate_id",
            "occurred_at",
            "received_at",
        ]
        read_only_fields = fields


RECENT_EVENT_ROWS = RowShape(RecentEventSerializer)


class MinuteRateSerializer(StrictSerializer):
    minute = serializers.DateTimeField()
    delivered = serializers.IntegerField()
    failed = serializers.IntegerField()


class OverviewSerializer(StrictSerializer):
    backlog = serializers.IntegerField(
        help_text=f"Events waiting: counted exactly up to {COUNTED_EXACTLY:,},"
        " PostgreSQL's estimate above."
    )
    backlog_estimated = serializers.BooleanField(help_text="Whether `backlog` is the estimate.")
    oldest_age_seconds = serializers.FloatField(allow_null=True)
    lanes_backing_off = serializers.IntegerField()
    delivered_last_hour = serializers.IntegerField()
    failed_last_hour = serializers.IntegerField()
    per_minute = MinuteRateSerializer(many=True)
    dead_letters = serializers.IntegerField()
    inbox_sizes = serializers.DictField(
        child=serializers.IntegerField(),
        help_text=f"Each consumer's handled events, counted exactly up to {COUNTED_EXACTLY:,},"
        " estimated above.",
    )
    inbox_sizes_estimated = serializers.ListField(
        child=serializers.CharField(), help_text="The consumers whose inbox size is the estimate."
    )
    effects = serializers.DictField(child=serializers.IntegerField())
