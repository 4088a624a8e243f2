"""Avro schemas' fingerprints and normal forms (and the schema ids' keys made from them)
computed again: `{"type": "int"}` is now the same schema as `"int"`, as Avro Java writes
and compares it, so a version that holds one is found as itself when it is sent again
in either spelling. Stored documents and the text answered for them are left as they
were registered."""

from importlib import import_module

from django.db import migrations

fingerprints_of = import_module(
    "apps.registry.migrations.0021_protobuf_reference_text"
).fingerprints_of


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0024_schema_identity_guid"),
    ]

    operations = [migrations.RunPython(fingerprints_of("AVRO"), migrations.RunPython.noop)]
