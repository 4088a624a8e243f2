from django.db import migrations, models

# Steward's own tables are swept under the retention rules now (the hourly
# governance.periodic_sweep_own_tables); the two hourly purges that read their windows
# from settings are gone, and so are their beat rows, which would send tasks no worker
# has any more.
RETIRED_SCHEDULES = ["core.periodic_purge_idempotency_records", "eventing.periodic_purge_inbox"]


def retire_schedules(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name__in=RETIRED_SCHEDULES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0005_one_purge_task_per_key"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="governancetask",
            name="held_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(retire_schedules, migrations.RunPython.noop),
    ]
