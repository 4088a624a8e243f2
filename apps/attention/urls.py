from django.urls import path

from apps.attention import views

app_name = "attention"

urlpatterns = [
    path("", views.queue_page, name="queue"),
    path("<slug:kind>/<str:key>/<slug:action>/", views.item_act, name="act"),
]
