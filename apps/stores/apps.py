from django.apps import AppConfig


class StoresConfig(AppConfig):
    name = "apps.stores"
    label = "stores"
    verbose_name = "Store bindings"

    def ready(self) -> None:
        # The secret broker's reconciler must be registered wherever effects settle;
        # importing it needs the models loaded, so it waits for ready().
        from apps.stores import reconciler  # noqa: F401
