"""The stores tasks: thin, by the names the beat rows and services send them by."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from apps.stores import services, tasks
from apps.stores.models import StoreBinding
from tests.stores.conftest import reload
from tests.stores.factories import bind, provisioned, rule

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
