from django.db import migrations


class Migration(migrations.Migration):
    """Schema references (0011) and reader schemas (0012) were built side by side; they
    touch different tables."""

    dependencies = [
        ("registry", "0011_schema_references"),
        ("registry", "0012_reader_schemas"),
    ]

    operations = []
