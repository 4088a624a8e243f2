"""The callback endpoint's one statement: look up the instance's tenant, record the
receipt in that tenant's scope (or platform-wide when no asset knows the instance).

Through the ORM this took nine round trips (scope, look-up, nested scope, insert,
savepoints, commit) and most of the endpoint's time. The function runs with the
caller's own rights, so row-level security applies to each of its statements
exactly as it does to Steward's Python code: it sets the scopes as apps.core.scope
says, and refuses to be called from inside a tenant's scope, which it would widen.
"""

from django.db import migrations

from apps.core import scope

OUTSIDE_TENANT = "a workflow callback is recorded outside any tenant's scope"
CREATE = f"""
CREATE FUNCTION steward_record_workflow_callback(
    p_instance uuid, p_decision text, p_reason text, p_callback_id text,
    OUT receipt bigint, OUT tenant uuid
) LANGUAGE plpgsql AS $$
DECLARE{scope.PLPGSQL_DECLARE_OUTER_SCOPE}
BEGIN
    {scope.plpgsql_refuse_tenant_scope(OUTSIDE_TENANT)}
    {scope.PLPGSQL_ENTER_SYSTEM}
    SELECT a.tenant_id INTO tenant FROM assets_asset AS a
    WHERE a.workflow_instance_id = p_instance LIMIT 1;
    IF tenant IS NOT NULL THEN
        {scope.plpgsql_narrow_to_tenant("tenant")}
    END IF;
    INSERT INTO assets_workflowcallback (tenant_id, workflow_instance_id, decision, reason,
        callback_id, outcome, received_at)
    VALUES (tenant, p_instance, p_decision, p_reason, left(p_callback_id, 100),
        CASE WHEN tenant IS NULL THEN 'unknown_instance' ELSE 'pending' END, now())
    RETURNING id INTO receipt;{scope.PLPGSQL_RESTORE_OUTER_SCOPE}
END
$$;
"""  # noqa: S608 - apps.core.scope's fragments, no input
DROP = "DROP FUNCTION steward_record_workflow_callback(uuid, text, text, text)"


class Migration(migrations.Migration):
    dependencies = [("assets", "0005_callback_queue")]

    operations = [migrations.RunSQL(CREATE, DROP)]
