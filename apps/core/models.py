from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class IdempotencyRecord(models.Model):
    """The stored answer to a POST sent with an Idempotency-Key.

    Written in the same transaction as the request's effect: a request that fails
    leaves no record, so its retry runs again; one that succeeded is answered from
    here. Keys are per caller, so two callers can never collide.
    """

    caller = models.CharField(max_length=80)
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    request_digest = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True)
    response_body = models.JSONField(null=True, encoder=DjangoJSONEncoder)
    response_headers = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["caller", "key"], name="idempotency_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.caller} {self.key}"


class ScheduledJob(models.Model):
    """One row per periodic job: who holds it now, and how its last runs went."""

    name = models.CharField(max_length=100, primary_key=True)
    # The beat task whose runs this row records, when the job is named otherwise (a
    # claimed job the task's body runs, apps.core.jobs); monitoring reads it by this.
    task = models.CharField(max_length=100, blank=True, default="")
    running_since = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_succeeded_at = models.DateTimeField(null=True, blank=True)
    last_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
