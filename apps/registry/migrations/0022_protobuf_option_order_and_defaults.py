"""Protobuf schemas' fingerprints computed again, as 0021 did: the normalized text they
hash now sorts custom options by their extension's name alone (`(a).z` before `(a.b)`, as
the reference sorts them), writes a string field's `default` escaped once (it was
escaped twice) and a key an option's message value sets twice as one list (`tags: ["a",
"b"]`, as the reference reads it); a dependency's text, part of the identity, changes
with the last. Stored documents and the text answered for them are left as they were
registered."""

from importlib import import_module

from django.db import migrations

# the same recomputation as 0021's, run again with the text as it is written now
fingerprints_again = import_module(
    "apps.registry.migrations.0021_protobuf_reference_text"
).fingerprints_again


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0021_protobuf_reference_text"),
    ]

    operations = [migrations.RunPython(fingerprints_again, migrations.RunPython.noop)]
