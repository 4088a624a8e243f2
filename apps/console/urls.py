from django.urls import path

from apps.console import views

app_name = "console"

urlpatterns = [
    path("", views.DashboardView.as_view(), name="dashboard"),
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("switch-tenant/", views.switch_tenant, name="switch-tenant"),
    path("theme/", views.set_theme, name="theme"),
    path("tenants/", views.TenantListView.as_view(), name="tenant-list"),
    path("tenants/<uuid:pk>/", views.TenantDetailView.as_view(), name="tenant-detail"),
    path("audit/", views.AuditListView.as_view(), name="audit-list"),
    path("service-accounts/", views.ServiceAccountListView.as_view(), name="service-account-list"),
]
