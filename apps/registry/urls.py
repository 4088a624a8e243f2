from django.urls import path

from apps.registry import views

app_name = "registry"

urlpatterns = [
    path("", views.TopicListView.as_view(), name="topic-list"),
    path("subscriptions/", views.SubscriptionListView.as_view(), name="subscription-list"),
]
