"""Steward answering its own owner tasks: a worker (the Celery task
governance.run_steward_task) does the work and completes the task with its receipt,
or reports it failed."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError

from apps.core.context import SYSTEM_ACTOR
from apps.core.locks import advisory_lock
from apps.core.scope import system_scope
from apps.governance.models import GovernanceTask
from apps.governance.orders import services as orders
from apps.governance.steward_owner import bundles, deletion
from apps.registry.catalog import STEWARD_SERVICE

logger = logging.getLogger(__name__)


def owner_task_run(*, task_id) -> str:
    """Do one of Steward's own owner tasks and complete it with its receipt, or report
    it failed with the reason (an operator retries it). Running it twice does nothing
    the second time: a settled task is left alone, and deleting is idempotent. Two
    runs at once (a redelivery, or the sweep behind a lost one) never overlap: the
    second finds the task claimed and leaves it."""
    with advisory_lock(f"governance.task:{task_id}", wait=False) as claimed:
        return _owner_task_run_claimed(task_id) if claimed else "running elsewhere"


def _owner_task_run_claimed(task_id) -> str:
    with system_scope():
        task = (
            GovernanceTask.objects.select_related("order")
            .filter(pk=task_id, owner=STEWARD_SERVICE)
            .first()
        )
    if task is None or not task.is_open:
        return "nothing to do"
    if task.status == GovernanceTask.Status.ISSUED:
        orders.owner_task_acknowledge(actor=SYSTEM_ACTOR, task_id=task.pk)
    try:
        if task.kind == GovernanceTask.Kind.EXPORT:
            receipt = {"bundles": bundles.write_export_bundles(task)}
        else:
            items = deletion.carry_out_deletion_phase(task)
            receipt = {"items": items, "digest": deletion.receipt_digest(items)}
    except (OperationalError, InterfaceError):
        # The database went away, not the task's work: the worker runs it again
        # (RETRY_WHILE_DATABASE_DOWN) rather than leave it failed for an operator.
        raise
    except Exception as exc:
        logger.exception("governance task %s failed", task.pk)
        orders.owner_task_fail(
            actor=SYSTEM_ACTOR, task_id=task.pk, reason=f"{type(exc).__name__}: {exc}"
        )
        return "failed"
    orders.owner_task_complete(actor=SYSTEM_ACTOR, task_id=task.pk, receipt=receipt)
    return "completed"
