from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.governance.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("orders", views.OrderViewSet, basename="governance-order")
router.register("tasks", views.OwnerTaskViewSet, basename="governance-task")

urlpatterns = [
    path("evidence/verify/", views.VerifyEvidenceView.as_view(), name="governance-verify"),
    *router.urls,
]
