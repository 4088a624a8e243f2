from django.db import migrations


def install(apps, schema_editor):
    from apps.registry.catalog import install_steward_topics

    install_steward_topics(
        apps.get_model("registry", "Service"), apps.get_model("registry", "Topic")
    )


class Migration(migrations.Migration):
    """Installs Steward's topics added since 0005 (governance.order) on existing databases."""

    dependencies = [("registry", "0006_schema_versions")]

    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
