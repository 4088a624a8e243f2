"""Send a Celery task by its registered name, so that no service imports a `tasks` module.

Tasks import the services they run; services only name the tasks they start. The name
is the same string beat's schedule rows use (`assets.delegate_approval`), so a reader
finds the task from either side with one search.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction


def send_task(name: str, **kwargs) -> None:
    """Start the task now. A task registered in this process is sent through its own
    object, so its options (and `task_always_eager` where a test sets it) hold; an
    unknown name still goes to the broker, for a worker that knows it."""
    task = current_app.tasks.get(name)
    if task is not None:
        task.apply_async(kwargs=kwargs)
    else:
        current_app.send_task(name, kwargs=kwargs)


def enqueue_on_commit(name: str, **kwargs) -> None:
    """Start the task once the caller's transaction commits, and never if it rolls back.
    A broker that is away does not fail the commit (`robust`): each kind of work has a
    sweep that finds what was never started."""
    transaction.on_commit(lambda: send_task(name, **kwargs), robust=True)
