"""Protobuf schemas' fingerprints (and the schema ids' keys made from them) computed again:
the normalized text they hash is now the reference registry's (custom options kept, its
layout), so a schema registered before is still found as the same schema, with the same
id, when it is sent again. Stored documents and the text answered for them are left as
they were registered."""

from django.db import migrations

from apps.registry.formats import InvalidSchema, parse_stored
from apps.registry.models import schema_identity_key


def fingerprints_of(kind: str):
    """The recomputation of one schema type's fingerprints and canonical forms, and of
    the schema ids' keys made from them (later migrations run it again, for this type or
    another, when what the fingerprint hashes changes)."""

    def again(apps, schema_editor):
        SchemaVersion = apps.get_model("registry", "SchemaVersion")
        SchemaIdentity = apps.get_model("registry", "SchemaIdentity")
        SchemaReference = apps.get_model("registry", "SchemaReference")
        ReaderSchema = apps.get_model("registry", "ReaderSchema")
        identities = {}
        for version in SchemaVersion.objects.filter(schema_type=kind).order_by("pk"):
            try:
                parsed = parse_stored(kind, version.schema)
            except InvalidSchema:
                continue  # kept as it is: judged as it was
            if (parsed.fingerprint, parsed.canonical) != (version.fingerprint, version.canonical):
                version.fingerprint, version.canonical = parsed.fingerprint, parsed.canonical
                version.save(update_fields=["fingerprint", "canonical"])
            references = [
                (r.name, r.referenced_id)
                for r in SchemaReference.objects.filter(version=version).order_by("position")
            ]
            contract = (version.metadata, version.rule_set)
            identities.setdefault(
                version.identity_id,
                schema_identity_key(kind, parsed.fingerprint, references, contract),
            )
        for pk, key in identities.items():
            identity = SchemaIdentity.objects.get(pk=pk)
            if identity.key == key:
                continue
            # two ids the old form told apart may now be one schema: the first keeps being
            # reused, the other still names its versions
            taken = SchemaIdentity.objects.filter(key=key, reusable=True).exclude(pk=pk).exists()
            identity.key, identity.reusable = key, identity.reusable and not taken
            identity.save(update_fields=["key", "reusable"])
        for reader in ReaderSchema.objects.filter(schema_type=kind):
            try:
                fingerprint = parse_stored(kind, reader.schema).fingerprint
            except InvalidSchema:
                continue
            if fingerprint != reader.fingerprint:
                reader.fingerprint = fingerprint
                reader.save(update_fields=["fingerprint"])

    return again


fingerprints_again = fingerprints_of("PROTOBUF")


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0020_reader_schema_references"),
    ]

    operations = [migrations.RunPython(fingerprints_again, migrations.RunPython.noop)]
