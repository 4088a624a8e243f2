from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.eventing.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("dead-letters", views.DeadLetterViewSet, basename="dead-letter")
router.register("uncertain-effects", views.UncertainEffectViewSet, basename="uncertain-effect")
router.register("recent-events", views.RecentEventViewSet, basename="recent-event")

urlpatterns = [
    path("overview/", views.OverviewView.as_view(), name="eventing-overview"),
    *router.urls,
]
