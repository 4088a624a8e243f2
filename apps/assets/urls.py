from django.urls import path

from apps.assets import views

app_name = "assets"

urlpatterns = [
    path("", views.AssetListView.as_view(), name="asset-list"),
    path("new/", views.asset_new, name="asset-new"),
    path("<uuid:pk>/", views.AssetDetailView.as_view(), name="asset-detail"),
    path("<uuid:pk>/request-approval/", views.asset_request_approval, name="asset-request"),
    path("<uuid:pk>/edit/", views.asset_edit, name="asset-edit"),
    path("<uuid:pk>/delete/", views.asset_delete, name="asset-delete"),
    path("<uuid:pk>/retire/", views.asset_retire, name="asset-retire"),
    path("<uuid:pk>/delegation/retry/", views.delegation_retry, name="delegation-retry"),
    path("<uuid:pk>/delegation/progress/", views.delegation_progress, name="delegation-progress"),
    path("<uuid:pk>/delegation/decide/", views.delegation_decide, name="delegation-decide"),
    path("<uuid:pk>/<str:verdict>/", views.asset_decide, name="asset-decide"),
]
