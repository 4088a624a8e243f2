"""Topics Steward itself produces. They are part of the code, so a migration installs
them (and `steward_setup` again, idempotently)."""

from django.db import migrations


def install(apps, schema_editor):
    from apps.registry.catalog import install_steward_topics

    install_steward_topics(
        apps.get_model("registry", "Service"), apps.get_model("registry", "Topic")
    )


class Migration(migrations.Migration):
    dependencies = [("registry", "0001_initial")]

    operations = [migrations.RunPython(install, migrations.RunPython.noop)]
