from django.urls import path

from apps.attention.api import views

urlpatterns = [
    path("", views.AttentionQueueView.as_view(), name="attention-queue"),
    path(
        "<slug:kind>/<str:key>/<slug:action>/",
        views.AttentionActView.as_view(),
        name="attention-act",
    ),
]
