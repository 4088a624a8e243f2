from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "apps.registry"
    label = "registry"
    verbose_name = "Topic catalog and schema registry"

    def ready(self):
        # Connects the topic cache's invalidation; defines the signals eventing follows.
        from apps.registry import signals  # noqa: F401
