from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS, MakeAppendOnly


class Migration(migrations.Migration):
    dependencies = [("governance", "0001_initial"), ("tenancy", "0002_row_level_security")]

    operations = [
        EnableTenantRLS("governanceorder"),
        EnableTenantRLS("orderapproval"),
        EnableTenantRLS("evidenceentry"),
        MakeAppendOnly("evidenceentry"),
    ]
