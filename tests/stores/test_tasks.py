"""The stores tasks: thin, by the names the beat rows and services send them by."""

import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.core.context import SYSTEM_ACTOR
from apps.core.enqueue import send_task
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport
from apps.stores import install, services, tasks
from apps.stores.models import ResidencyRule, StoreBinding
from portal.celery import app
from tests.stores.conftest import reload
from tests.stores.factories import bind, provisioned, rule
from tests.support import wait_for

pytestmark = pytest.mark.django_db


def test_the_tasks_keep_their_registered_names():
    assert tasks.provision_binding.name == "stores.provision_binding"
    assert tasks.revoke_binding.name == "stores.revoke_binding"
    assert tasks.periodic_resume_bindings.name == "stores.periodic_resume_bindings"


def test_provisioning_and_revoking_run_their_services(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    assert tasks.provision_binding(binding_id=str(binding.pk)) == "succeeded"
    assert tasks.provision_binding(binding_id=str(binding.pk)) == "nothing to do"
    services.binding_retire(actor=SYSTEM_ACTOR, binding=reload(binding))
    assert tasks.revoke_binding(binding_id=str(binding.pk)) == "retired"
    assert reload(binding).status == "retired"


def test_the_periodic_sweep_resumes_stalled_bindings(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    services.binding_retire(actor=SYSTEM_ACTOR, binding=binding)  # its enqueue was lost
    with tenant_scope(tenant_a):
        StoreBinding.objects.update(updated_at=timezone.now() - timedelta(days=1))
    assert tasks.periodic_resume_bindings() == 1
    assert reload(binding).status == "retired"


def test_the_expiry_sweep_keeps_its_registered_name_and_default_schedule():
    name = "stores.periodic_expire_exceptions_and_certifications"
    assert tasks.periodic_expire_exceptions_and_certifications.name == name
    report = SetupReport()
    install.install_schedules(report)
    scheduled = PeriodicTask.objects.get(name=name)
    assert scheduled.enabled and scheduled.queue == "periodic"
    assert scheduled.interval.every == 1 and scheduled.interval.period == "minutes"
    assert report.created == [f"schedule {n}" for n in ("stores.periodic_resume_bindings", name)]
    install.install_schedules(report := SetupReport())
    assert report.created == []  # installed once; an operator's change is kept


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_records_why_it_did_not_provision(tenant_a, store, profile, regions):
    allow = rule("allow", geographies=["EU"])
    binding = bind(tenant_a, store, profile, regions["westeurope"])  # its task is queued
    with system_scope():  # the rule narrows before the worker takes the task
        ResidencyRule.objects.filter(pk=allow.pk).update(geographies=["IL"])
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        wait_for(lambda: reload(binding).status_reason.startswith("Not provisioned"), timeout=30)
    refused = reload(binding)
    assert refused.status == "requested" and refused.key_reference == ""
    assert "westeurope" in refused.violation
    assert refused.status_reason == f"Not provisioned: {refused.violation}"


@pytest.mark.django_db(transaction=True)
def test_a_real_periodic_worker_ends_an_exception_and_flags_the_binding_again(
    tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    services.binding_grant_exception(
        actor=SYSTEM_ACTOR,
        binding=reload(binding),
        reason="two seconds",
        expires_at=timezone.now() + timedelta(seconds=2),
    )
    assert reload(binding).violation == ""
    time.sleep(2.1)
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["periodic"], shutdown_timeout=30
    ):
        send_task("stores.periodic_expire_exceptions_and_certifications")
        wait_for(lambda: reload(binding).violation != "", timeout=30)
    again = reload(binding)
    assert again.exception_ended_at is not None and "westeurope" in again.violation
