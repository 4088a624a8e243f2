# Export bundles and archives move from a folder on one host into PostgreSQL, where
# every web process and worker reaches them (issue 39).

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0007_task_reminded_escalated"),
        ("tenancy", "0009_api_token_rotated_at"),
    ]

    operations = [
        migrations.AlterField(
            model_name="exportartifact",
            name="path",
            field=models.CharField(
                help_text="The archive's key in the export store.", max_length=500
            ),
        ),
        migrations.CreateModel(
            name="ExportChunk",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=500)),
                ("seq", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "order",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="governance.governanceorder",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="tenancy.tenant",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["created_at"], name="governance_chunk_created")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("key", "seq"), name="one_export_chunk_per_place"
                    )
                ],
            },
        ),
        EnableTenantRLS("exportchunk"),
        # Archives are ZIPs, already compressed: PostgreSQL stores the chunks out of line
        # without trying to compress them again.
        migrations.RunSQL(
            'ALTER TABLE "governance_exportchunk" ALTER COLUMN "data" SET STORAGE EXTERNAL',
            migrations.RunSQL.noop,
        ),
    ]
