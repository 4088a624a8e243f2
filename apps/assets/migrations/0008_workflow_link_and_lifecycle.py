"""The durable workflow link, the asset lifecycle, unknown-instance receipts.

Besides the fields: the callback function (0006) also records the receipt's asset, so
an asset's receipts stay with it across instances; and existing receipts are given
the asset their instance names (an instance on a row today decides its current
request: a re-request used to clear it, so no link is stale). The back-fill runs
tenant by tenant, in each tenant's scope, as row-level security requires of every
write.
"""

from importlib import import_module

from django.db import migrations, models

from apps.core import scope

# Going back restores 0006's function, which knows none of the columns added here.
PREVIOUS = import_module("apps.assets.migrations.0006_record_workflow_callback")

RECORD_CALLBACK = f"""
CREATE OR REPLACE FUNCTION steward_record_workflow_callback(
    p_instance uuid, p_decision text, p_reason text, p_callback_id text,
    OUT receipt bigint, OUT tenant uuid
) LANGUAGE plpgsql AS $$
DECLARE{scope.PLPGSQL_DECLARE_OUTER_SCOPE}
    found_asset uuid;
BEGIN
    {scope.plpgsql_refuse_tenant_scope(PREVIOUS.OUTSIDE_TENANT)}
    {scope.PLPGSQL_ENTER_SYSTEM}
    SELECT a.tenant_id, a.id INTO tenant, found_asset FROM assets_asset AS a
    WHERE a.workflow_instance_id = p_instance LIMIT 1;
    IF tenant IS NOT NULL THEN
        {scope.plpgsql_narrow_to_tenant("tenant")}
    END IF;
    INSERT INTO assets_workflowcallback (tenant_id, asset_id, workflow_instance_id, decision,
        reason, callback_id, outcome, received_at)
    VALUES (tenant, found_asset, p_instance, p_decision, p_reason, left(p_callback_id, 100),
        CASE WHEN tenant IS NULL THEN 'unknown_instance' ELSE 'pending' END, now())
    RETURNING id INTO receipt;{scope.PLPGSQL_RESTORE_OUTER_SCOPE}
END
$$;
"""  # noqa: S608 - apps.core.scope's fragments, no input

BACKFILL = f"""
DO $$
DECLARE
    tenants uuid[];
    t uuid;
BEGIN
    {scope.PLPGSQL_ENTER_SYSTEM}
    SELECT array_agg(DISTINCT tenant_id) INTO tenants FROM assets_workflowcallback
    WHERE tenant_id IS NOT NULL;
    FOREACH t IN ARRAY coalesce(tenants, '{{}}'::uuid[]) LOOP
        {scope.plpgsql_narrow_to_tenant("t")}
        UPDATE assets_workflowcallback AS c SET asset_id = a.id FROM assets_asset AS a
        WHERE c.tenant_id = t AND a.tenant_id = t
          AND a.workflow_instance_id = c.workflow_instance_id;
    END LOOP;
    {scope.PLPGSQL_LEAVE_TENANT}
END
$$;
"""  # noqa: S608 - apps.core.scope's fragments, no input


class Migration(migrations.Migration):
    dependencies = [
        ("assets", "0007_list_indexes"),
        ("tenancy", "0006_membership_invitation"),
    ]

    operations = [
        migrations.AddField(
            model_name="asset",
            name="delegation_failure",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "None"),
                    ("refused", "Refused by the Workflow Service"),
                    ("failed", "Failed"),
                ],
                db_default="",
                default="",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="asset",
            name="status_reason",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
        migrations.AddField(
            model_name="asset",
            name="workflow_link_stale",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="asset_id",
            field=models.UUIDField(blank=True, db_index=True, null=True),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="linked_asset_id",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="resolution",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "None"),
                    ("linked", "Linked to an asset"),
                    ("dismissed", "Dismissed"),
                ],
                db_default="",
                default="",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="resolution_reason",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="resolved_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="workflowcallback",
            name="resolved_by",
            field=models.CharField(blank=True, db_default="", default="", max_length=150),
        ),
        migrations.AddIndex(
            model_name="asset",
            index=models.Index(
                condition=models.Q(
                    ("status", "requested"), ("workflow_instance_id__isnull", False)
                ),
                fields=["created_at"],
                name="asset_waiting_on_workflow",
            ),
        ),
        migrations.AddIndex(
            model_name="asset",
            index=models.Index(
                condition=models.Q(
                    ("status", "requested"), models.Q(("delegation_failure", ""), _negated=True)
                ),
                fields=["created_at"],
                name="asset_delegation_failed",
            ),
        ),
        migrations.AddIndex(
            model_name="workflowcallback",
            index=models.Index(
                condition=models.Q(("outcome", "unknown_instance"), ("resolution", "")),
                fields=["received_at"],
                name="assets_callback_unresolved",
            ),
        ),
        migrations.RunSQL(RECORD_CALLBACK, [PREVIOUS.DROP, PREVIOUS.CREATE]),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
