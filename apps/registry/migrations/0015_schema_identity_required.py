import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Apart from 0014, whose data migration leaves deferred foreign-key checks pending
    that PostgreSQL will not alter the table under."""

    dependencies = [
        ("registry", "0014_shared_schema_ids_and_subject_modes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="schemaversion",
            name="identity",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="versions",
                to="registry.schemaidentity",
            ),
        ),
        migrations.RemoveField(model_name="topic", name="registry_mode"),
    ]
