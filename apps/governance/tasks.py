from celery import shared_task


@shared_task(scope="self", name="governance.run_steward_task")
def run_steward_task(*, task_id: str) -> str:
    from apps.governance import work

    return work.run_steward_task(task_id=task_id)


@shared_task(scope="self", name="governance.assemble_export")
def assemble_export(*, order_id: str) -> str:
    from apps.governance import exports

    return exports.assemble(order_id=order_id)


@shared_task(scope="self", name="governance.periodic_advance_orders")
def periodic_advance_orders() -> dict:
    from apps.core.jobs import periodic_job
    from apps.governance import work

    return periodic_job("governance.advance_orders")(work.advance_orders)()
