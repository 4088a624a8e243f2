from django.db import migrations


def install(apps, schema_editor):
    from apps.registry.catalog import install_steward_topics

    install_steward_topics(
        apps.get_model("registry", "Service"), apps.get_model("registry", "Topic")
    )


class Migration(migrations.Migration):
    """Installs Steward's topics added since 0002 (compute.step) on existing databases."""

    dependencies = [("registry", "0002_steward_topics")]

    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
