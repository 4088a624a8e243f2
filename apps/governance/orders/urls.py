from django.urls import path

from apps.governance.orders import views

app_name = "governance"

urlpatterns = [
    path("", views.OrderListView.as_view(), name="order-list"),
    path("orders/new/", views.order_new, name="order-new"),
    path("orders/<uuid:pk>/", views.OrderDetailView.as_view(), name="order-detail"),
    path("orders/<uuid:pk>/body/", views.order_body, name="order-body"),
    path("orders/<uuid:pk>/<str:act>/", views.order_act, name="order-act"),
    path("tasks/<uuid:pk>/retry/", views.owner_task_retry, name="task-retry"),
]
