"""One workflow instance, one waiting asset; callbacks go to the asset waiting on it.

Linking an unknown-instance callback by hand did not check that another asset already
held the instance, so one instance could be the live link of two assets (in two
tenants), and the callback function's `LIMIT 1` picked whichever. Now a partial unique
index allows one live link per instance (an asset Requested under it, not re-requested
since); a decided or re-requested asset keeps its id as history, as before.

Existing duplicates, before the index: of the assets waiting on one instance, the one
that took it first (earliest updated) keeps it; each other one is made a failed
delegation (its link marked stale, the instance id kept as history) saying why, so it
waits in the attention queue (failed-delegation) for a person to delegate it again
(a new instance) or decide it. Nothing is decided by guess. Each change runs in the
owning tenant's scope, as row-level security requires of every write.

The callback function looks the live link up first, then the newest historical one, so
of a history-only duplicate left from before, the callback never picks the wrong one.
"""

from importlib import import_module

from django.db import migrations, models

from apps.core import scope

PREVIOUS = import_module("apps.assets.migrations.0008_workflow_link_and_lifecycle")

DUPLICATE_REASON = (
    "Another asset waits on the same workflow instance (linked twice before Steward "
    "refused it): delegate this one again, or decide it."
)

UNLINK_DUPLICATES = f"""
DO $$
DECLARE
    losers uuid[];
    owners uuid[];
    i integer;
BEGIN
    {scope.PLPGSQL_ENTER_SYSTEM}
    SELECT array_agg(id), array_agg(tenant_id) INTO losers, owners FROM (
        SELECT a.id, a.tenant_id, row_number() OVER (
            PARTITION BY a.workflow_instance_id ORDER BY a.updated_at, a.id) AS n
        FROM assets_asset AS a
        WHERE a.workflow_instance_id IS NOT NULL AND a.status = 'requested'
          AND NOT a.workflow_link_stale
    ) AS ranked WHERE n > 1;
    FOR i IN 1 .. coalesce(array_length(losers, 1), 0) LOOP
        {scope.plpgsql_narrow_to_tenant("owners[i]")}
        UPDATE assets_asset SET workflow_link_stale = true, delegation_failure = 'failed',
            status_reason = '{DUPLICATE_REASON}', updated_at = now()
        WHERE id = losers[i];
        {scope.PLPGSQL_LEAVE_TENANT}
        {scope.PLPGSQL_ENTER_SYSTEM}
    END LOOP;
    {scope.PLPGSQL_LEAVE_SYSTEM}
END
$$;
"""  # noqa: S608 - apps.core.scope's fragments and a constant, no input

# 0008's function with the look-up changed: the asset waiting on the instance (one at
# most, asset_one_live_link_per_instance), else the last that had it.
LOOKUP = """
    WHERE a.workflow_instance_id = p_instance LIMIT 1;"""
LIVE_FIRST = """
    WHERE a.workflow_instance_id = p_instance
    ORDER BY (a.status = 'requested' AND NOT a.workflow_link_stale) DESC, a.updated_at DESC
    LIMIT 1;"""
if PREVIOUS.RECORD_CALLBACK.count(LOOKUP) != 1:
    raise RuntimeError("0008's callback function no longer has the look-up 0011 replaces")
RECORD_CALLBACK = PREVIOUS.RECORD_CALLBACK.replace(LOOKUP, LIVE_FIRST)


class Migration(migrations.Migration):
    dependencies = [
        ("assets", "0010_asset_status_index"),
        ("tenancy", "0007_attention_token_scope"),
    ]

    operations = [
        migrations.RunSQL(UNLINK_DUPLICATES, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="asset",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("status", "requested"),
                    ("workflow_instance_id__isnull", False),
                    ("workflow_link_stale", False),
                ),
                fields=("workflow_instance_id",),
                name="asset_one_live_link_per_instance",
            ),
        ),
        migrations.RunSQL(RECORD_CALLBACK, PREVIOUS.RECORD_CALLBACK),
    ]
