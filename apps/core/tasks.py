"""Celery's task base for Steward.

Every task declares the scope its body runs in:

    @shared_task(scope="system")   # the body runs in one system-scope transaction
    @shared_task(scope="tenant")   # needs a `tenant_id` keyword; one transaction in its scope
    @shared_task(scope="self")     # the body opens its own scopes (short transactions)

A task that declares none refuses to run, so no task body ever touches tenant rows
without a scope having been chosen on purpose. Every run of a beat task (a name with
`.periodic_`) is recorded for schedule monitoring (apps.core.jobs.record_run).
"""

from __future__ import annotations

from celery import Task
from celery.signals import before_task_publish
from django.db import InterfaceError, OperationalError

from apps.core.context import request_id
from apps.core.jobs import record_run
from apps.core.scope import system_scope, tenant_scope

SCOPES = ("system", "tenant", "self")

# For one-off tasks that are safe to run twice: one that lost its database (PostgreSQL
# restarting or failing over) goes again within seconds. Without it the task is
# simply gone — sweeps re-drive some kinds of work, but not every kind (the chaos
# drill lost delegated approvals this way, docs/operations.md "Chaos drill").
RETRY_WHILE_DATABASE_DOWN = {
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "retry_jitter": False,
    "max_retries": 12,  # about five minutes
}


CORRELATION_HEADER = "steward_request_id"


@before_task_publish.connect
def _carry_request_id(headers=None, **kwargs):
    """A task enqueued while serving a request (or running a task) carries its id, so
    the worker's log lines and the events it emits name the same correlation id."""
    rid = request_id.get()
    if rid and headers is not None:
        headers.setdefault(CORRELATION_HEADER, rid)


class ScopedTask(Task):
    scope: str | None = None

    def __call__(self, *args, **kwargs):
        if self.name.startswith("celery."):
            return super().__call__(*args, **kwargs)  # Celery's own housekeeping tasks
        token = request_id.set(self.request.get(CORRELATION_HEADER) or self.request.id or "")
        try:
            if ".periodic_" in self.name:
                return record_run(self.name, lambda: self._run_in_scope(*args, **kwargs))
            return self._run_in_scope(*args, **kwargs)
        finally:
            request_id.reset(token)

    def _run_in_scope(self, *args, **kwargs):
        if self.scope == "system":
            with system_scope():
                return super().__call__(*args, **kwargs)
        if self.scope == "tenant":
            if not kwargs.get("tenant_id"):
                raise ValueError(f"task {self.name} runs in a tenant scope and needs tenant_id")
            with tenant_scope(kwargs["tenant_id"]):
                return super().__call__(*args, **kwargs)
        if self.scope == "self":
            return super().__call__(*args, **kwargs)
        raise RuntimeError(f"task {self.name} declares no scope (one of {', '.join(SCOPES)})")
