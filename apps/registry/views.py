from apps.console.listing import Column, ListPage, OperatorRequiredMixin
from apps.registry import selectors
from apps.registry.filters import SubscriptionFilterSet, TopicFilterSet


class TopicListView(ListPage):
    title = "Topics"
    related_pages = (("Subscriptions", "registry:subscription-list"),)
    filterset_class = TopicFilterSet
    search_fields = ("name", "description")
    default_ordering = "name"
    columns = (
        Column("Topic", "name", sort="name"),
        Column("Description", "description"),
        Column("Producers", "producer_names"),
        Column("Schema version", "current_schema_version", sort="current_schema_version"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.topic_list()


class SubscriptionListView(OperatorRequiredMixin, ListPage):
    title = "Subscriptions"
    filterset_class = SubscriptionFilterSet
    search_fields = ("consumer__name", "topic__name", "endpoint")
    default_ordering = "topic__name"
    columns = (
        Column("Topic", "topic.name", sort="topic__name"),
        Column("Consumer", "consumer.name", sort="consumer__name"),
        Column("Transport", "get_transport_display", sort="transport"),
        Column("Endpoint", "endpoint"),
        Column("Active", "is_active", sort="is_active"),
        Column("Failures in a row", "consecutive_failures", sort="consecutive_failures"),
        Column("Last error", "last_error"),
        Column("Last delivered", "last_delivered_at", sort="last_delivered_at"),
    )

    def get_base_queryset(self):
        return selectors.subscription_list()
