"""Issue 37 §1: a tenant being deleted takes no new store bindings or data, and a
Requested binding (flagged, or still being provisioned when its tenant's deletion
comes) can be retired, which cancels its provisioning."""

import threading

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict
from apps.core.scope import system_scope, tenant_scope
from apps.stores import brokers, selectors, services
from apps.stores.attention import FlaggedBindings
from apps.stores.models import StoreBinding
from apps.tenancy.models import Tenant
from apps.tenancy.services import tenant_set_lifecycle_status
from tests.stores.conftest import events, reload
from tests.stores.factories import bind, provisioned, rule, stores_like
from tests.stores.test_api import BINDINGS, platform


def leave(tenant, status="offboarding"):
    """What a deletion order does to its tenant (phase 1 takes it offboarding)."""
    with tenant_scope(tenant):
        tenant_set_lifecycle_status(tenant_id=tenant.pk, status=status)


def flagged_requested(tenant, store, profile, regions):
    """Requested in Europe, then the rule narrows to Israel before it is provisioned."""
    allow = rule("allow", geographies=["EU", "IL"])
    binding = bind(tenant, store, profile, regions["westeurope"])
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    binding = reload(binding)
    assert binding.status == "requested" and binding.violation
    return binding


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "code"), [("offboarding", "tenant_offboarding"), ("deleted", "tenant_deleted")]
)
def test_a_leaving_tenant_gets_no_new_binding_from_the_service_or_the_api(
    tenant_a, store, profile, regions, status, code
):
    rule("allow", geographies=["IL"])
    leave(tenant_a, status)

    with pytest.raises(Conflict) as refused:
        bind(tenant_a, store, profile, regions["israelcentral"])
    assert refused.value.code == code

    body = dict(store=store.slug, tenant=tenant_a.slug, profile=profile.slug)
    answer = platform().post(BINDINGS, {**body, "region": "israelcentral"}, format="json")
    assert answer.status_code == 409
    assert answer["Content-Type"].startswith("application/problem+json")
    assert answer.json()["code"] == code
    with system_scope():
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()


@pytest.mark.django_db
def test_a_leaving_tenant_gets_no_new_residency_rule(tenant_a, regions):
    leave(tenant_a)
    with pytest.raises(Conflict) as refused:
        rule("allow", tenant=tenant_a, geographies=["IL"])
    assert refused.value.code == "tenant_offboarding"


@pytest.mark.django_db
def test_a_requested_binding_of_a_leaving_tenant_is_not_provisioned(
    tenant_a, store, profile, regions, local_broker
):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    leave(tenant_a)

    assert services.binding_provision(binding_id=binding.pk) == "refused"
    binding = reload(binding)
    assert binding.status == "requested" and not binding.key_reference
    assert "offboarding" in binding.status_reason
    assert brokers.get_broker().find(str(binding.pk)) is None


@pytest.mark.django_db(transaction=True)
def test_a_binding_waits_for_a_tenant_going_offboarding_and_then_is_refused(
    tenant_a, store, profile, regions
):
    """Race-safe: the deletion order's transaction takes the tenant offboarding; a
    SetStoreBinding meanwhile waits on the tenant row and is refused once it commits."""
    rule("allow", geographies=["IL"])
    offboarding = threading.Event()
    commit = threading.Event()

    def deletion_order_phase_one():
        try:
            with tenant_scope(tenant_a), transaction.atomic():
                tenant_set_lifecycle_status(tenant_id=tenant_a.pk, status="offboarding")
                offboarding.set()
                commit.wait(10)
        finally:
            connection.close()

    order = threading.Thread(target=deletion_order_phase_one)
    order.start()
    assert offboarding.wait(10)
    outcome = {}

    def set_binding():
        try:
            bind(tenant_a, store, profile, regions["israelcentral"])
            outcome["answer"] = "bound"
        except Conflict as exc:
            outcome["answer"] = exc.code
        finally:
            connection.close()

    caller = threading.Thread(target=set_binding)
    caller.start()
    caller.join(1)
    assert caller.is_alive()  # it waits on the tenant row the order holds
    commit.set()
    order.join(10)
    caller.join(10)
    assert outcome["answer"] == "tenant_offboarding"
    with system_scope():
        assert Tenant.objects.get(pk=tenant_a.pk).status == "offboarding"
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()


@pytest.mark.django_db
def test_a_flagged_requested_binding_is_retired_through_the_api_and_its_provisioning_cancelled(
    tenant_a, store, profile, regions, operator, local_broker
):
    binding = flagged_requested(tenant_a, store, profile, regions)
    client = APIClient()
    client.force_login(operator)

    answer = client.post(f"{BINDINGS}{binding.pk}/retire/", {"reason": "not there"}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "retiring"
    assert services.binding_revoke(binding_id=binding.pk) == "retired"
    # cancelled: a provisioning sent earlier does nothing now
    assert services.binding_provision(binding_id=binding.pk) == "nothing to do"
    binding = reload(binding)
    assert binding.status == "retired" and not binding.key_reference
    assert [e["status"] for e in events()] == ["requested", "retiring", "retired"]


@pytest.mark.django_db
def test_a_flagged_requested_binding_is_retired_from_the_console_and_the_attention_queue(
    client, tenant_a, tenant_b, store, profile, regions, operator
):
    from apps.core.context import Actor

    first = flagged_requested(tenant_a, store, profile, regions)
    client.force_login(operator)
    page = client.get(f"/stores/bindings/{first.pk}/").content.decode()
    assert '<summary role="button" class="secondary outline">Retire</summary>' in page
    client.post(f"/stores/bindings/{first.pk}/retire/", {"reason": "gone", "confirm": "yes"})
    assert reload(first).status in {"retiring", "retired"}

    only_b = rule("allow", tenant=tenant_b, geographies=["EU"])
    second = bind(tenant_b, store, profile, regions["westeurope"])
    services.rule_delete(actor=SYSTEM_ACTOR, rule=only_b)
    assert reload(second).violation
    said = FlaggedBindings().act(
        actor=Actor(user=operator), key=str(second.pk), action="retire", values={"reason": "no"}
    )
    assert "retiring" in said
    assert reload(second).status == "retiring"


@pytest.mark.django_db
def test_a_deletion_can_retire_a_binding_still_being_provisioned(
    tenant_a, store, profile, regions, local_broker
):
    """What governance's deletion calls for every live binding, Requested ones included:
    binding_retire, then binding_revoke."""
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    leave(tenant_a)
    services.binding_retire(actor=SYSTEM_ACTOR, binding=binding, reason="tenant deletion")
    assert services.binding_revoke(binding_id=binding.pk) == "retired"
    with tenant_scope(tenant_a):
        [coverage] = selectors.binding_erasure_coverage(tenant_a.pk)
        # no owner is asked to purge what was never provisioned
        assert not selectors.bindings_holding_tenant_data(tenant_a.pk).exists()
    assert coverage.covered and coverage.receipt is None
    assert "never provisioned" in coverage.reason.lower()


@pytest.mark.django_db
def test_the_coverage_of_a_tenants_bindings_says_which_still_wait_and_why(
    tenant_a, store, profile, regions, local_broker
):
    rule("allow", geographies=["IL"])
    retired = provisioned(tenant_a, store, profile, regions["israelcentral"])
    services.binding_retire(actor=SYSTEM_ACTOR, binding=retired)
    services.binding_revoke(binding_id=retired.pk)
    [other, live_store] = stores_like(store, 2)
    refused = bind(tenant_a, other, profile, regions["westeurope"])
    live = provisioned(tenant_a, live_store, profile, regions["israelcentral"])
    assert reload(refused).status == "refused"

    with tenant_scope(tenant_a):
        coverage = {c.binding.pk: c for c in selectors.binding_erasure_coverage(tenant_a.pk)}
    assert set(coverage) == {retired.pk, refused.pk, live.pk}
    assert not coverage[live.pk].covered and "provisioned" in coverage[live.pk].reason
    assert not coverage[retired.pk].covered
    assert "receipt" in coverage[retired.pk].reason and "knowledge" in coverage[retired.pk].reason
    assert coverage[refused.pk].covered and "refused" in coverage[refused.pk].reason.lower()

    services.binding_record_data_purged(
        actor=SYSTEM_ACTOR, binding=reload(retired), receipt={"task": "t-1"}
    )
    with tenant_scope(tenant_a):
        coverage = {c.binding.pk: c for c in selectors.binding_erasure_coverage(tenant_a.pk)}
    assert coverage[retired.pk].covered and coverage[retired.pk].receipt == {"task": "t-1"}
    assert [c.binding.pk for c in coverage.values() if not c.covered] == [live.pk]
