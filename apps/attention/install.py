"""What every set-up installs for the attention queue (apps.core.setup): its topic and
its minute's scan."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule

from apps.attention.services import attention_topic_ensure
from apps.core.setup import install_interval_schedule

SCAN = "attention.periodic_scan"


def install_topics(report) -> None:
    attention_topic_ensure()


def install_reference_data(report) -> None:
    install_interval_schedule(report, SCAN, 1, IntervalSchedule.MINUTES)
