from django.urls import path

from apps.console import manage_views, views

app_name = "console"

urlpatterns = [
    path("", views.DashboardView.as_view(), name="dashboard"),
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("switch-tenant/", views.switch_tenant, name="switch-tenant"),
    path("theme/", views.set_theme, name="theme"),
    path("tenants/", views.TenantListView.as_view(), name="tenant-list"),
    path("tenants/new/", manage_views.tenant_create, name="tenant-create"),
    path("tenants/<uuid:pk>/", views.TenantDetailView.as_view(), name="tenant-detail"),
    path("tenants/<uuid:pk>/edit/", manage_views.tenant_edit, name="tenant-edit"),
    path("tenants/<uuid:pk>/members/", manage_views.membership_add, name="membership-add"),
    path(
        "tenants/<uuid:pk>/members/<int:membership_pk>/remove/",
        manage_views.membership_remove,
        name="membership-remove",
    ),
    path("audit/", views.AuditListView.as_view(), name="audit-list"),
    path("service-accounts/", views.ServiceAccountListView.as_view(), name="service-account-list"),
    path(
        "service-accounts/new/", manage_views.service_account_create, name="service-account-create"
    ),
    path(
        "service-accounts/<int:pk>/",
        manage_views.service_account_detail,
        name="service-account-detail",
    ),
    path(
        "service-accounts/<int:pk>/tokens/<int:token_pk>/revoke/",
        manage_views.token_revoke,
        name="token-revoke",
    ),
]
