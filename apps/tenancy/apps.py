from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "apps.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"

    def ready(self):
        from apps.tenancy.api import schema  # noqa: F401 - registers the OpenAPI security scheme
