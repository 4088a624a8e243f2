from rest_framework.routers import DefaultRouter

from apps.tenancy.api import views

router = DefaultRouter(trailing_slash=True)
router.include_root_view = False
router.register("tenants", views.TenantViewSet, basename="tenant")
router.register("memberships", views.MembershipViewSet, basename="membership")
router.register("invitations", views.InvitationViewSet, basename="invitation")
router.register("regions", views.RegionViewSet, basename="region")
router.register("data-classes", views.DataClassViewSet, basename="data-class")
router.register("audit-events", views.AuditEventViewSet, basename="audit-event")

urlpatterns = router.urls
