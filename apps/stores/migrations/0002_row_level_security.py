from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("stores", "0001_initial"), ("tenancy", "0002_row_level_security")]

    operations = [
        EnableTenantRLS("storebinding"),
        EnableTenantRLS("storebindingchange"),
        # Rules for all tenants (no tenant) are read by every tenant's evaluation and
        # written only in the system scope; a tenant's own rules are its alone.
        EnableTenantRLS("residencyrule", shared_global_rows=True),
    ]
