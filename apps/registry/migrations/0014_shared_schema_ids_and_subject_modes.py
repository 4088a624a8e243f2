"""Schema ids shared across subjects, and the Schema Registry API's mode per subject.

Every existing version keeps the id it was handed out (its own row id): a client may
hold any of them. Where several versions had the same schema (and references), the
lowest id becomes the one new registrations of it reuse; the others stay, not reusable,
each still resolving to its schema. A topic's mode applied to all its subjects; it is
kept for each role the topic has versions of, and for its key and value subjects.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models
from django.db.models import Q

from apps.registry.models import schema_identity_key


def share_ids(apps, schema_editor):
    SchemaVersion = apps.get_model("registry", "SchemaVersion")
    SchemaIdentity = apps.get_model("registry", "SchemaIdentity")
    SchemaReference = apps.get_model("registry", "SchemaReference")
    references: dict[int, list] = {}
    for row in SchemaReference.objects.order_by("version_id", "position"):
        references.setdefault(row.version_id, []).append((row.name, row.referenced_id))
    seen = set()
    for version in SchemaVersion.objects.order_by("pk"):
        key = schema_identity_key(
            version.schema_type, version.fingerprint, references.get(version.pk, [])
        )
        SchemaIdentity.objects.create(
            pk=version.pk,
            key=key,
            schema_type=version.schema_type,
            reusable=key not in seen,
            created_at=version.created_at,
        )
        seen.add(key)
        SchemaVersion.objects.filter(pk=version.pk).update(identity_id=version.pk)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('registry_schemaidentity', 'id'),"
            " GREATEST((SELECT max(id) FROM registry_schemaidentity), 1))"
        )


def modes_per_subject(apps, schema_editor):
    Topic = apps.get_model("registry", "Topic")
    for topic in Topic.objects.exclude(registry_mode=""):
        roles = set(topic.schema_versions.values_list("role", flat=True)) | {"value", "key"}
        topic.subject_modes = {role: topic.registry_mode for role in sorted(roles)}
        topic.save(update_fields=["subject_modes"])


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0013_merge_references_and_readers"),
    ]

    operations = [
        migrations.CreateModel(
            name="SchemaIdentity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=64)),
                ("schema_type", models.CharField(max_length=8)),
                ("reusable", models.BooleanField(default=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        condition=Q(reusable=True), fields=("key",), name="one_reusable_schema_id"
                    )
                ],
            },
        ),
        migrations.AddField(
            model_name="schemaversion",
            name="identity",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="versions",
                to="registry.schemaidentity",
            ),
        ),
        migrations.RunPython(share_ids, migrations.RunPython.noop),
        migrations.AddField(
            model_name="topic",
            name="subject_modes",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(modes_per_subject, migrations.RunPython.noop),
    ]
