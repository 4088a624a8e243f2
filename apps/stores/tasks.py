from celery import shared_task

from apps.core.jobs import periodic_job
from apps.core.tasks import RETRY_WHILE_DATABASE_DOWN
from apps.stores import services


@shared_task(scope="self", name="stores.provision_binding", **RETRY_WHILE_DATABASE_DOWN)
def provision_binding(*, binding_id: str) -> str:
    return services.binding_provision(binding_id=binding_id)


@shared_task(scope="self", name="stores.revoke_binding", **RETRY_WHILE_DATABASE_DOWN)
def revoke_binding(*, binding_id: str) -> str:
    return services.binding_revoke(binding_id=binding_id)


@shared_task(scope="self", name="stores.periodic_resume_bindings")
def periodic_resume_bindings() -> int:
    return periodic_job("stores.resume_bindings")(services.resume_stalled_bindings)()


@shared_task(scope="self", name="stores.periodic_expire_exceptions_and_certifications")
def periodic_expire_exceptions_and_certifications() -> int:
    return periodic_job("stores.expire_exceptions_and_certifications")(
        services.expire_exceptions_and_certifications
    )()
