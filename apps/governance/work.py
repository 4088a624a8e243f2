"""What Steward's workers do for governance: its own tasks, and the minute's round
(start orders whose cooling-off has passed, flag overdue tasks)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db import InterfaceError, OperationalError

from apps.core.context import SYSTEM_ACTOR
from apps.core.locks import session_lock
from apps.core.scope import system_scope
from apps.governance import own, services
from apps.governance.models import GovernanceTask
from apps.registry.catalog import STEWARD_SERVICE

logger = logging.getLogger(__name__)


def run_steward_task(*, task_id) -> str:
    """Do one of Steward's own tasks and complete it with its receipt, or report it
    failed with the reason (an operator retries it). Running it twice does nothing
    the second time: a settled task is left alone, and deleting is idempotent. Two
    runs at once (a redelivery, or the sweep behind a lost one) never overlap: the
    second finds the task claimed and leaves it."""
    with session_lock(f"governance.task:{task_id}", wait=False) as claimed:
        return _run_steward_task(task_id) if claimed else "running elsewhere"


def _run_steward_task(task_id) -> str:
    with system_scope():
        task = (
            GovernanceTask.objects.select_related("order")
            .filter(pk=task_id, owner=STEWARD_SERVICE)
            .first()
        )
    if task is None or not task.is_open:
        return "nothing to do"
    if task.status == GovernanceTask.Status.ISSUED:
        services.task_acknowledge(actor=SYSTEM_ACTOR, task_id=task.pk)
    try:
        if task.kind == GovernanceTask.Kind.EXPORT:
            directory = Path(settings.STEWARD_EXPORT_DIR) / "bundles" / str(task.order_id)
            shutil.rmtree(directory / "steward", ignore_errors=True)
            (directory / "steward").mkdir(parents=True)
            receipt = {"bundles": own.export_bundles(task, directory / "steward")}
        else:
            items = own.perform(task)
            receipt = {"items": items, "digest": own.receipt_digest(items)}
    except (OperationalError, InterfaceError):
        # The database went away, not the task's work: the worker runs it again
        # (RETRY_WHILE_DATABASE_DOWN) rather than leave it failed for an operator.
        raise
    except Exception as exc:
        logger.exception("governance task %s failed", task.pk)
        services.task_fail(
            actor=SYSTEM_ACTOR, task_id=task.pk, reason=f"{type(exc).__name__}: {exc}"
        )
        return "failed"
    services.task_complete(actor=SYSTEM_ACTOR, task_id=task.pk, receipt=receipt)
    return "completed"


def advance_orders() -> dict:
    return {
        "started": services.start_due_orders(),
        "resumed": services.resume_held_orders(),
        "redriven": services.resume_stalled_work(),
        "overdue": services.flag_overdue(),
    }
