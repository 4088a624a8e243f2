"""One FilterSet per model, shared by the console's list pages and the API's lists."""

import django_filters

from apps.registry.models import SchemaVersion, Subscription, Topic


class TopicFilterSet(django_filters.FilterSet):
    inline = ("producer",)

    producer = django_filters.CharFilter(field_name="producers__name")

    class Meta:
        model = Topic
        fields = ["producer"]


class SubscriptionFilterSet(django_filters.FilterSet):
    inline = ("consumer", "topic", "is_active")

    consumer = django_filters.CharFilter(field_name="consumer__name")
    topic = django_filters.CharFilter(field_name="topic__name")

    class Meta:
        model = Subscription
        fields = ["consumer", "topic", "transport", "is_active"]


class SchemaVersionFilterSet(django_filters.FilterSet):
    inline = ("state", "topic__name")

    class Meta:
        model = SchemaVersion
        fields = ["state", "topic__name"]
