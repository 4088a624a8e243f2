import django_filters

from apps.eventing.models import DeadLetter, RecentEvent, UncertainEffect


class DeadLetterFilterSet(django_filters.FilterSet):
    inline = ("state", "topic", "consumer")

    consumer = django_filters.CharFilter(field_name="subscription__consumer__name")
    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = DeadLetter
        fields = ["state", "topic", "event_type", "consumer", "tenant", "event_id"]


class UncertainEffectFilterSet(django_filters.FilterSet):
    inline = ("state", "target_system")

    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = UncertainEffect
        fields = ["state", "target_system", "operation", "actor", "tenant"]


class RecentEventFilterSet(django_filters.FilterSet):
    inline = ("topic", "event_type")

    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = RecentEvent
        fields = ["topic", "event_type", "aggregate_type", "aggregate_id", "tenant"]
