from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("compute", "0001_initial"), ("tenancy", "0002_row_level_security")]

    operations = [
        EnableTenantRLS("computebatch"),
        EnableTenantRLS("batchcompletion"),
        # A tenant session sees its own links, the system session (the poller) all of
        # them; every change to a link happens in the owning tenant's scope.
        EnableTenantRLS("workflowbatchlink"),
    ]
