from django.urls import path
from rest_framework.routers import DefaultRouter

from apps.stores.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("bindings", views.BindingViewSet, basename="store-binding")
router.register("stores", views.StoreViewSet, basename="store")
router.register("profiles", views.ProfileViewSet, basename="store-profile")
router.register("certifications", views.CertificationViewSet, basename="profile-certification")
router.register("evidence/benchmarks", views.BenchmarkResultViewSet, basename="benchmark-result")
router.register(
    "evidence/contract-tests", views.ContractTestResultViewSet, basename="contract-test-result"
)
router.register(
    "evidence/policies", views.PhysicalizationPolicyViewSet, basename="physicalization-policy"
)
router.register("evidence/pilots", views.MigrationPilotViewSet, basename="migration-pilot")
router.register("residency/rules", views.RuleViewSet, basename="residency-rule")

urlpatterns = [
    path("residency/evaluate/", views.EvaluateView.as_view(), name="residency-evaluate"),
    *router.urls,
]
