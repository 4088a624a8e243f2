from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("core", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="scheduledjob",
            name="task",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
    ]
