from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0006_own_tables_under_rules"),
    ]

    operations = [
        migrations.AddField(
            model_name="governancetask",
            name="reminded_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="governancetask",
            name="escalated_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
