"""The attention queue's memory: when each item entered it and when it left. The items
themselves are the apps' rows (apps.core.attention); this is what lets the queue say
how long something has waited and announce it once as it enters."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.tenancy.models import Tenant


class AttentionEntry(models.Model):
    kind = models.SlugField(max_length=64)
    key = models.CharField(max_length=100)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    title = models.CharField(max_length=300)
    entered_at = models.DateTimeField(default=timezone.now)
    left_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["entered_at", "id"]
        constraints = [
            # One open entry per item: a second scan finds it and announces nothing.
            models.UniqueConstraint(
                fields=["kind", "key"], condition=Q(left_at=None), name="attention_one_open"
            )
        ]
        indexes = [
            models.Index(
                fields=["kind", "entered_at"], condition=Q(left_at=None), name="attention_open"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"
