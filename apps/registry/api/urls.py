from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.registry.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("services", views.ServiceViewSet, basename="service")
router.register("topics", views.TopicViewSet, basename="topic")
router.register("subscriptions", views.SubscriptionViewSet, basename="subscription")
router.register("schema-versions", views.SchemaVersionViewSet, basename="schema-version")

urlpatterns = [
    path("model-sync/", views.ModelSyncView.as_view(), name="model-sync"),
    *router.urls,
]
