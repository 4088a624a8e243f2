from celery import shared_task

from apps.core.jobs import periodic_job


@shared_task(scope="self", name="compute.poll_batch_links", acks_late=False)
def poll_batch_links() -> int:
    """Kicked when a batch turns terminal. Two pollers at once are safe: links are
    claimed with SKIP LOCKED in each owning tenant's scope."""
    from apps.compute import services
    from apps.core.kick import clear_kick

    clear_kick(services.POLL_KICK_KEY)
    total = 0
    while moved := services.poll_batch_links():
        total += moved
    return total


@shared_task(scope="self", name="compute.periodic_poll_batch_links")
def periodic_poll_batch_links() -> int:
    from apps.compute import services

    return services.poll_batch_links()


@shared_task(scope="self", name="compute.periodic_resolve_orphan_links")
@periodic_job("compute.resolve_orphan_links")
def periodic_resolve_orphan_links() -> int:
    from apps.compute import services

    return services.resolve_orphan_links()
