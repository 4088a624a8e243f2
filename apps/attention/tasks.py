"""The attention queue's beat job: the minute's scan."""

from __future__ import annotations

from celery import shared_task

from apps.attention import services
from apps.core.jobs import periodic_job


@shared_task(scope="self", name="attention.periodic_scan")
@periodic_job("attention.scan")
def periodic_scan() -> dict:
    """Every minute: what entered the attention queue is announced, what left is closed."""
    return services.scan()
