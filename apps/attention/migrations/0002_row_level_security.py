from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("attention", "0001_initial"), ("tenancy", "0002_row_level_security")]

    # An item of a tenant's is remembered in that tenant's scope; platform items (no
    # tenant) in the system scope, which reads them all.
    operations = [EnableTenantRLS("attentionentry", global_rows=True)]
