from django.apps import AppConfig


class EventingConfig(AppConfig):
    name = "apps.eventing"
    label = "eventing"
    verbose_name = "Eventing"

    def ready(self):
        # Steward's own consumers register their handlers on import.
        from apps.eventing import handlers  # noqa: F401
