from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS


class Migration(migrations.Migration):
    dependencies = [("assets", "0003_workflow_callback")]

    # Receipts of callbacks for unknown instances have no tenant: system scope only.
    operations = [EnableTenantRLS("workflowcallback", global_rows=True)]
