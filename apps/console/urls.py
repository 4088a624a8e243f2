from django.urls import path

from apps.console import account_views, manage_views, views

app_name = "console"

urlpatterns = [
    path("", views.DashboardView.as_view(), name="dashboard"),
    path("login/", views.login_view, name="login"),
    path("login/code/", views.login_code_view, name="login-code"),
    path("logout/", views.logout_view, name="logout"),
    path("account/two-factor/", account_views.two_factor, name="two-factor"),
    path("account/two-factor/start/", account_views.two_factor_start, name="two-factor-start"),
    path(
        "account/two-factor/confirm/",
        account_views.two_factor_confirm,
        name="two-factor-confirm",
    ),
    path(
        "account/two-factor/recovery-codes/",
        account_views.recovery_codes_regenerate,
        name="two-factor-recovery-codes",
    ),
    path(
        "account/two-factor/disable/",
        account_views.two_factor_disable,
        name="two-factor-disable",
    ),
    path("account/two-factor/reset/", account_views.two_factor_reset, name="two-factor-reset"),
    path("search/", views.search_view, name="search"),
    path("switch-tenant/", views.switch_tenant, name="switch-tenant"),
    path("invitations/", manage_views.invitations, name="invitations"),
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
    path(
        "tenants/<uuid:pk>/invitations/withdraw/",
        manage_views.invitation_withdraw,
        name="invitation-withdraw",
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
    path(
        "service-accounts/<int:pk>/tokens/<int:token_pk>/rotate/",
        manage_views.token_rotate,
        name="token-rotate",
    ),
]
