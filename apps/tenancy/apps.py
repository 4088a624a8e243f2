from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "apps.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"

    def ready(self):
        from django.contrib.auth.signals import user_logged_in

        from apps.tenancy import auth_cache
        from apps.tenancy.api import schema  # noqa: F401 - registers the OpenAPI security scheme
        from apps.tenancy.middleware import pin_session_tenant

        user_logged_in.connect(pin_session_tenant, dispatch_uid="steward-pin-session-tenant")
        auth_cache.connect_signals()
