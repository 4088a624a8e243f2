"""The Celery application shared by workers, beat and the web tier (to enqueue)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("steward")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Tasks run inside an explicit tenant or system scope (apps.core.tasks.ScopedTask).
app.conf.task_cls = "apps.core.tasks:ScopedTask"
app.autodiscover_tasks()
