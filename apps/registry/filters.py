import django_filters

from apps.registry.models import Subscription, Topic


class TopicFilterSet(django_filters.FilterSet):
    producer = django_filters.CharFilter(field_name="producers__name")

    class Meta:
        model = Topic
        fields = ["producer"]


class SubscriptionFilterSet(django_filters.FilterSet):
    consumer = django_filters.CharFilter(field_name="consumer__name")
    topic = django_filters.CharFilter(field_name="topic__name")

    class Meta:
        model = Subscription
        fields = ["consumer", "topic", "transport", "is_active"]
