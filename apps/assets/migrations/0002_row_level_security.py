from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("assets", "0001_initial"), ("tenancy", "0002_row_level_security")]

    operations = [
        EnableTenantRLS("asset"),
    ]
