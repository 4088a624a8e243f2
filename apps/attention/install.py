"""What every set-up installs for the attention queue (apps.core.setup): its topic and
its minute's scan."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.attention.services import attention_topic_ensure
from apps.core.setup import Schedule, install_periodic_tasks

SCAN = "attention.periodic_scan"
SCHEDULES = [Schedule(SCAN, 1, IntervalSchedule.MINUTES)]


def install_schedules(report) -> None:
    install_periodic_tasks(report, SCHEDULES)


def install_topics(report) -> None:
    attention_topic_ensure()
