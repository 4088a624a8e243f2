"""Each schema id's GUID (SchemaIdentity.guid), as the reference registry derives it from
a schema's content: for the ids handed out before, computed with the same function
registering uses (models.schema_guid) from each id's first version: the string the Schema
Registry API answers for it, its references and its data contract. An id no version has
any more keeps none until its schema is registered again (gate.schema_id_for)."""

from django.db import migrations, models

from apps.registry.models import schema_guid
from apps.registry.versions.texts import registry_text


def fill_guids(apps, schema_editor):
    SchemaIdentity = apps.get_model("registry", "SchemaIdentity")
    SchemaVersion = apps.get_model("registry", "SchemaVersion")
    SchemaReference = apps.get_model("registry", "SchemaReference")
    firsts = SchemaVersion.objects.order_by("identity_id", "pk").distinct("identity_id")
    for version in firsts.select_related("topic"):
        references = list(
            SchemaReference.objects.filter(version=version)
            .select_related("referenced__topic")
            .order_by("position")
        )
        text = registry_text(version, references)
        pairs = [(r.name, r.referenced) for r in references]
        guid = schema_guid(text, pairs, (version.metadata, version.rule_set))
        SchemaIdentity.objects.filter(pk=version.identity_id).update(guid=guid)


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0023_protobuf_numbers_as_written"),
    ]

    operations = [
        migrations.AddField(
            model_name="schemaidentity",
            name="guid",
            field=models.UUIDField(db_index=True, null=True),
        ),
        migrations.RunPython(fill_guids, migrations.RunPython.noop),
    ]
