"""Bounded reconciliation: checks since (re)start, and escalation to a person."""

import django.db.models.functions.datetime
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("eventing", "0003_dead_letter_replaying"),
        ("tenancy", "0006_membership_invitation"),
    ]

    operations = [
        migrations.AddField(
            model_name="uncertaineffect",
            name="checks",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="uncertaineffect",
            name="escalated_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="uncertaineffect",
            name="reconcile_since",
            field=models.DateTimeField(
                db_default=django.db.models.functions.datetime.Now(),
                default=django.utils.timezone.now,
            ),
        ),
        migrations.AddIndex(
            model_name="uncertaineffect",
            index=models.Index(
                condition=models.Q(("escalated_at__isnull", False), ("state", "uncertain")),
                fields=["escalated_at"],
                name="uncertain_effect_escalated",
            ),
        ),
    ]
