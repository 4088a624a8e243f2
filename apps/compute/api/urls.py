from rest_framework.routers import DefaultRouter

from apps.compute.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("batches", views.ComputeBatchViewSet, basename="compute-batch")

urlpatterns = router.urls
