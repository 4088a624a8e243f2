"""The Celery application shared by workers, beat and the web tier (to enqueue)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

# Every task runs inside an explicit tenant or system scope (apps.core.tasks.ScopedTask).
app = Celery("steward", task_cls="apps.core.tasks:ScopedTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
