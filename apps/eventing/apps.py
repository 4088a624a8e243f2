from django.apps import AppConfig


class EventingConfig(AppConfig):
    name = "apps.eventing"
    label = "eventing"
    verbose_name = "Eventing"

    def ready(self):
        # Imported for what importing does, as Django's ready() hooks are: Steward's own
        # consumers register their handlers, and eventing's receivers of the registry's
        # signals are connected.
        from apps.eventing import handlers, signals  # noqa: F401
