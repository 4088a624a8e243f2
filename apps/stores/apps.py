from django.apps import AppConfig


class StoresConfig(AppConfig):
    name = "apps.stores"
    label = "stores"
    verbose_name = "Store bindings"

    def ready(self) -> None:
        # The secret broker's reconciler must be registered wherever effects settle.
        from apps.stores import brokers  # noqa: F401
