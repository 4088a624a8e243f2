from django.urls import path

from apps.assets import views

app_name = "assets"

urlpatterns = [
    path("", views.AssetListView.as_view(), name="asset-list"),
    path("new/", views.asset_new, name="asset-new"),
    path("<uuid:pk>/", views.AssetDetailView.as_view(), name="asset-detail"),
    path("<uuid:pk>/request-approval/", views.asset_request_approval, name="asset-request"),
    path("<uuid:pk>/<str:verdict>/", views.asset_decide, name="asset-decide"),
]
