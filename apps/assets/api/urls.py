from rest_framework.routers import DefaultRouter

from apps.assets.api import views

router = DefaultRouter()
router.include_root_view = False
router.register("assets", views.AssetViewSet, basename="asset")

urlpatterns = router.urls
