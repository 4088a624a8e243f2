from django.apps import AppConfig


class AssetsConfig(AppConfig):
    name = "apps.assets"
    label = "assets"
    verbose_name = "Assets"

    def ready(self):
        from apps.assets import effects  # noqa: F401 - registers the start reconciler
