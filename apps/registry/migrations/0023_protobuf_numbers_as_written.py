"""Protobuf schemas' fingerprints computed again, as 0021 and 0022 did: the normalized
text they hash now writes a number as the reference normalizes one (a decimal read as a
float when its float writes as the same shortest decimal, so `0.0025` is 0.002 and
`2.0005` is 2; a negative zero as `-0`), and keeps a field's json_name even when it is
the one protoc derives, as the reference's does (a schema a serializer registered, whose
descriptor carries every field's, is no longer the same schema as its text). Stored
documents and the text answered for them are left as they were registered: their numbers
were written as Python reads them, and are kept as written now."""

from importlib import import_module

from django.db import migrations

# the same recomputation as 0021's, run again with the text as it is written now
fingerprints_again = import_module(
    "apps.registry.migrations.0021_protobuf_reference_text"
).fingerprints_again


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0022_protobuf_option_order_and_defaults"),
    ]

    operations = [migrations.RunPython(fingerprints_again, migrations.RunPython.noop)]
