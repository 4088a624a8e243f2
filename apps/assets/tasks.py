from celery import shared_task


@shared_task(scope="self", name="assets.delegate_approval")
def delegate_approval(*, asset_id: str) -> str:
    from apps.assets import services

    return services.asset_delegate(asset_id=asset_id)


@shared_task(scope="self", name="assets.apply_workflow_callback")
def apply_workflow_callback(*, receipt_id: int) -> str:
    from apps.assets import services

    return services.callback_apply(receipt_id=receipt_id)


@shared_task(scope="self", name="assets.periodic_reconcile_workflows")
def periodic_reconcile_workflows() -> dict:
    from apps.assets import services
    from apps.core.jobs import periodic_job

    return periodic_job("assets.reconcile_workflows")(services.reconcile_stale_delegations)()
