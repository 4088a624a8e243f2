from celery import shared_task

from apps.assets import services
from apps.core.jobs import periodic_job
from apps.core.kick import clear_kick
from apps.core.tasks import RETRY_WHILE_DATABASE_DOWN


@shared_task(scope="self", name="assets.delegate_approval", **RETRY_WHILE_DATABASE_DOWN)
def delegate_approval(*, asset_id: str) -> str:
    return services.asset_delegate(asset_id=asset_id)


@shared_task(scope="self", name="assets.apply_workflow_callbacks", acks_late=False)
def apply_workflow_callbacks(*, tenant_id: str) -> int:
    """Kicked when a tenant's callback is recorded. Not acknowledged late: a lost run
    loses nothing, the receipts stay pending for the next kick or the sweep."""
    # Cleared before looking: a callback recorded after this point kicks again.
    clear_kick(services.callback_kick_key(tenant_id))
    return services.drain_callbacks(tenant_id)


@shared_task(scope="self", name="assets.periodic_apply_workflow_callbacks")
def periodic_apply_workflow_callbacks() -> int:
    return services.drain_all_callbacks()


@shared_task(scope="self", name="assets.periodic_reconcile_workflows")
def periodic_reconcile_workflows() -> dict:
    return periodic_job("assets.reconcile_workflows")(services.reconcile_stale_delegations)()


@shared_task(scope="self", name="assets.periodic_resume_delegations")
def periodic_resume_delegations() -> int:
    return periodic_job("assets.resume_delegations")(services.resume_lost_delegations)()
