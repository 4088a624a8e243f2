from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.governance.api import retention_views as views

router = DefaultRouter()
router.include_root_view = False
router.register("rules", views.RetentionRuleViewSet, basename="retention-rule")
router.register("holds", views.LegalHoldViewSet, basename="legal-hold")
router.register("sweeps", views.RetentionSweepViewSet, basename="retention-sweep")

urlpatterns = [
    path("preview/", views.RetentionPreviewView.as_view(), name="retention-preview"),
    *router.urls,
]
