from celery import shared_task

from apps.compute import services
from apps.core.jobs import periodic_job
from apps.core.kick import clear_kick

# The kicked run and beat's sweep share one claim, so one poll runs at a time and a
# workflow instance's completions leave in the order its batches finished. A run
# loops until the queue is empty, so a skipped one loses nothing.
POLL_JOB = "compute.poll_batch_links"


@periodic_job(POLL_JOB)
def _poll_until_empty() -> int:
    total = 0
    while moved := services.poll_batch_links():
        total += moved
    return total


@shared_task(scope="self", name="compute.poll_batch_links", acks_late=False)
def poll_batch_links():
    """Kicked when a batch turns terminal."""
    clear_kick(services.POLL_KICK_KEY)
    return _poll_until_empty()


@shared_task(scope="self", name="compute.periodic_poll_batch_links")
def periodic_poll_batch_links():
    return _poll_until_empty()


@shared_task(scope="self", name="compute.periodic_resolve_orphan_links")
@periodic_job("compute.resolve_orphan_links")
def periodic_resolve_orphan_links() -> int:
    total = 0
    while resolved := services.resolve_orphan_links():
        total += resolved
    return total
