"""The stores services: the binding lifecycle (residency and workload first,
credentials by reference only) and residency rules with the bindings they flag."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError as DjangoValidationError

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, InvalidTransition, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, selectors, services
from apps.stores.models import ResidencyRule, StoreBinding, StoreProfile
from apps.stores.residency import RuleView
from apps.tenancy.models import AuditEvent
from tests.stores.conftest import events, reload
from tests.stores.factories import bind, rule

pytestmark = pytest.mark.django_db


def test_the_whole_lifecycle_keeps_references_and_history(
    tenant_a, store, profile, regions, local_broker
):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    assert binding.status == "requested" and binding.residency_verdict["allowed"]
    assert services.binding_provision(binding_id=binding.pk) == "succeeded"
    binding = reload(binding)
    assert binding.status == "provisioned"
    assert binding.key_reference == f"local:{binding.pk}/key"
    assert (local_broker / str(binding.pk) / "connection").exists()
    binding = services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    assert binding.status == "active"
    binding = services.binding_retire(actor=SYSTEM_ACTOR, binding=binding)
    assert services.binding_revoke(binding_id=binding.pk) == "retired"
    assert not (local_broker / str(binding.pk) / "key").exists()
    with tenant_scope(tenant_a):
        steps = list(reload(binding).history.values_list("from_status", "to_status"))
    assert steps == [
        ("", "requested"),
        ("requested", "provisioned"),
        ("provisioned", "active"),
        ("active", "retiring"),
        ("retiring", "retired"),
    ]
    assert [e["status"] for e in events()] == [to for _, to in steps]
    # retired, the store may be bound again
    assert bind(tenant_a, store, profile, regions["israelcentral"]).pk != binding.pk


def test_residency_refuses_with_the_deciding_rule_and_nothing_is_provisioned(
    tenant_a, store, profile, regions, local_broker
):
    rule("allow", geographies=["IL", "EU"])
    deny = rule(
        "deny",
        data_class=store.data_class,
        regions=[regions["westeurope"]],
        reason="personal data stays in Israel",
    )
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    assert binding.status == "refused"
    assert binding.residency_verdict["rule_id"] == deny.pk
    assert "personal data stays in Israel" in binding.status_reason
    assert services.binding_provision(binding_id=binding.pk) == "nothing to do"
    with system_scope():
        assert not UncertainEffect.objects.exists()
    assert not local_broker.exists()
    assert [e["status"] for e in events()] == ["refused"]


def test_workload_gating_refuses_a_queue_on_portable_documents(tenant_a, store, regions):
    rule("allow", geographies=["IL"])
    store.workload_class = "queue"
    store.save()
    documents = StoreProfile.objects.create(
        slug="docs", name="Docs", engine="mongodb", shape="portable_documents"
    )
    binding = bind(tenant_a, store, documents, regions["israelcentral"])
    assert binding.status == "refused" and binding.workload_verdict["decision"] == "no_go"
    assert "portable documents" in binding.status_reason


def test_one_live_binding_per_store_and_tenant(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL", "EU"])
    first = bind(tenant_a, store, profile, regions["israelcentral"])
    assert bind(tenant_a, store, profile, regions["israelcentral"]).pk == first.pk
    with pytest.raises(Conflict) as refused:
        bind(tenant_a, store, profile, regions["westeurope"])
    assert refused.value.code == "binding_exists"


def test_illegal_transitions_are_refused(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    with pytest.raises(InvalidTransition):
        services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    assert reload(binding).status == "requested"
    # a Requested binding may retire (issue 37), and is then never made Active
    services.binding_retire(actor=SYSTEM_ACTOR, binding=binding)
    with pytest.raises(InvalidTransition):
        services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    assert reload(binding).status == "retiring"


def test_a_rule_change_flags_violating_bindings_and_changes_none(
    tenant_a, tenant_b, store, profile, regions
):
    allow_eu = rule("allow", geographies=["EU", "IL"])
    in_eu = bind(tenant_a, store, profile, regions["westeurope"])
    in_il = bind(tenant_b, store, profile, regions["israelcentral"])
    for binding in (in_eu, in_il):
        services.binding_provision(binding_id=binding.pk)
    services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=in_eu)
    proposal = RuleView(
        id=None,
        tenant_id=None,
        data_class_id=None,
        effect="allow",
        region_ids=frozenset(),
        geographies=frozenset({"IL"}),
    )
    preview = selectors.would_violate(
        selectors.proposed_rules(replacing=allow_eu, proposal=proposal)
    )
    assert [b.pk for b, _ in preview] == [in_eu.pk]
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow_eu, geographies=["IL"], regions=[])
    flagged, kept = reload(in_eu), reload(in_il)
    assert flagged.status == "active" and "westeurope" in flagged.violation
    assert kept.status == "provisioned" and kept.violation == ""
    [violation] = events("ResidencyViolationDetected")
    assert violation["binding_id"] == str(in_eu.pk)
    services.flag_violations()  # once per violation, not once per check
    assert len(events("ResidencyViolationDetected")) == 1


def test_bindings_are_their_tenants_alone(tenant_a, tenant_b, store, profile, regions):
    rule("allow", geographies=["IL"])
    bind(tenant_a, store, profile, regions["israelcentral"])
    with tenant_scope(tenant_b):
        assert not StoreBinding.objects.exists()
    with tenant_scope(tenant_a):
        assert StoreBinding.objects.count() == 1


def test_a_requested_binding_is_flagged_too_and_a_rules_tenant_cannot_change(
    tenant_a, tenant_b, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    assert binding.status == "requested"
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    assert "westeurope" in reload(binding).violation
    mine = rule("allow", tenant=tenant_a, geographies=["IL"])
    with pytest.raises(ValidationFailed) as refused:
        services.rule_update(actor=SYSTEM_ACTOR, rule=mine, tenant=tenant_b, regions=[])
    assert refused.value.code == "tenant_immutable"


def test_without_a_scope_even_the_shared_rules_read_as_nothing(tenant_a):
    rule("allow", geographies=["IL"])
    assert not ResidencyRule.objects.exists()
    with tenant_scope(tenant_a):
        assert ResidencyRule.objects.count() == 1


class FlakyRevokeBroker(brokers.LocalFileBroker):
    def revoke(self, reference):
        raise ConnectionError("the broker is down")


def test_stalled_bindings_are_resumed_and_a_failed_revoke_is_explained_then_retried(
    tenant_a, store, profile, regions, settings
):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])  # its enqueue was lost
    assert services.resume_stalled_bindings(older_than=timedelta(0)) == 1
    binding = services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=reload(binding))
    services.binding_retire(actor=SYSTEM_ACTOR, binding=binding)
    settings.STEWARD_SECRET_BROKER = f"{__name__}.FlakyRevokeBroker"
    assert services.binding_revoke(binding_id=binding.pk) == "retry"
    stuck = reload(binding)
    assert stuck.status == "retiring" and "ConnectionError" in stuck.status_reason
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    services.resume_stalled_bindings(older_than=timedelta(0))
    assert reload(binding).status == "retired"


def test_every_move_the_table_lacks_is_refused_with_the_bindings_status(
    tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    with pytest.raises(InvalidTransition) as refused:
        services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    assert refused.value.detail == "The binding is requested; it cannot become active."
    assert refused.value.extra == {"status": "requested"}
    table = StoreBinding.TRANSITIONS
    assert not table.allows("requested", "active")
    assert set(table.sources("retiring")) == {"requested", "provisioned", "active"}
    assert table.initial == {"requested", "refused"}


def test_a_stale_copy_that_lost_the_race_is_refused_and_writes_no_history(
    tenant_a, store, profile, regions
):
    # given a binding retired through one copy while another copy still says Active
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    services.binding_provision(binding_id=binding.pk)
    active = services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=reload(binding))
    stale = reload(active)
    services.binding_retire(actor=SYSTEM_ACTOR, binding=active)
    services.binding_revoke(binding_id=binding.pk)
    # when the stale copy is retired again
    with pytest.raises(InvalidTransition) as refused:
        services.binding_retire(actor=SYSTEM_ACTOR, binding=stale)
    # then the refusal names the status found, and nothing is added to the history
    assert refused.value.extra == {"status": "retired"}
    assert refused.value.detail == "The binding is retired; it cannot become retiring."
    with tenant_scope(tenant_a):
        assert reload(binding).history.count() == 5
    assert [e["status"] for e in events()][-1] == "retired"


def test_a_rule_is_audited_before_and_after(tenant_a, regions):
    allow = rule("allow", geographies=["EU", "IL"], reason="default")
    services.rule_update(
        actor=SYSTEM_ACTOR,
        rule=allow,
        geographies=["IL"],
        regions=[regions["israelcentral"]],
        reason="Israel only",
    )
    with system_scope():
        created, updated = AuditEvent.objects.filter(
            object_type="stores.residencyrule", object_id=str(allow.pk)
        ).order_by("id")
    assert created.action == "residency_rule.create"
    assert created.changes["rule"] == [None, "allow all tenants / all data"]
    assert created.changes["geographies"] == [None, ["EU", "IL"]]
    assert updated.action == "residency_rule.update"
    assert updated.changes == {
        "geographies": [["EU", "IL"], ["IL"]],
        "reason": ["default", "Israel only"],
        "regions": [[], ["israelcentral"]],
    }


def test_a_rule_is_validated_before_it_is_saved(tenant_a):
    with pytest.raises(DjangoValidationError) as refused:
        rule("allow", geographies=["X" * 65])
    assert "geographies" in refused.value.message_dict
    with pytest.raises(ValidationFailed) as needs_reason:
        rule("allow", tenant=tenant_a, geographies=["US"], is_exception=True)
    assert needs_reason.value.code == "reason_required"
    with system_scope():
        assert not ResidencyRule.objects.exists()
    allow = rule("allow", geographies=["IL"])
    with pytest.raises(TypeError):
        services.rule_update(actor=SYSTEM_ACTOR, rule=allow, id=99)
