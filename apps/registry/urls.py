from django.urls import path

from apps.registry import views

app_name = "registry"

urlpatterns = [
    path("", views.TopicListView.as_view(), name="topic-list"),
    path("overview/", views.OverviewView.as_view(), name="overview"),
    path("subscriptions/", views.SubscriptionListView.as_view(), name="subscription-list"),
    path("approvals/", views.ApprovalListView.as_view(), name="approval-list"),
    path("versions/", views.VersionListView.as_view(), name="version-list"),
    path("versions/<int:pk>/", views.VersionDetailView.as_view(), name="version-detail"),
    path("versions/<int:pk>/<str:act>/", views.version_act, name="version-act"),
]
