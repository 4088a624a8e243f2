from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("eventing", "0001_initial"), ("tenancy", "0002_row_level_security")]

    operations = [
        # Platform-wide events (no tenant) are written and read in the system scope.
        EnableTenantRLS("outboxevent", global_rows=True),
        EnableTenantRLS("inboxentry", global_rows=True),
        EnableTenantRLS("deadletter", global_rows=True),
        EnableTenantRLS("uncertaineffect", global_rows=True),
        EnableTenantRLS("recentevent", global_rows=True),
    ]
