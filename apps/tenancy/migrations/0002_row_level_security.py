from django.db import migrations

from apps.tenancy.rls import EnableTenantRLS, MakeAppendOnly


class Migration(migrations.Migration):
    dependencies = [("tenancy", "0001_initial")]

    operations = [
        EnableTenantRLS("membership"),
        EnableTenantRLS("serviceaccount", global_rows=True),
        EnableTenantRLS("auditevent", global_rows=True),
        EnableTenantRLS("tenantuserobjectpermission", column="content_object_id"),
        EnableTenantRLS("tenantgroupobjectpermission", column="content_object_id"),
        MakeAppendOnly("auditevent"),
    ]
