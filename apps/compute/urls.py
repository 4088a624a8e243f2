from django.urls import path

from apps.compute import views

app_name = "compute"

urlpatterns = [
    path("", views.BatchListView.as_view(), name="batch-list"),
    path("links/", views.LinkListView.as_view(), name="link-list"),
]
