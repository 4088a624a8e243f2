"""The binding lifecycle: residency and workload first, credentials by reference only."""

import logging

import pytest
from django.db import connection

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, InvalidTransition
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.effects import OutcomeUnknown, reconcile_due
from apps.eventing.models import OutboxEvent, UncertainEffect
from apps.stores import brokers, services
from apps.stores.models import StoreBinding, StoreProfile
from tests.stores.conftest import bind, rule

pytestmark = pytest.mark.django_db


def events(event_type="StoreBindingChanged"):
    with system_scope():
        return [
            e.payload
            for e in OutboxEvent.objects.filter(
                topic="stores.binding", event_type=event_type
            ).order_by("id")
        ]


def reload(binding):
    with tenant_scope(binding.tenant_id):
        return StoreBinding.objects.get(pk=binding.pk)


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
    with pytest.raises(InvalidTransition):
        services.binding_retire(actor=SYSTEM_ACTOR, binding=binding)
    assert reload(binding).status == "requested"


class TimingOutBroker(brokers.LocalFileBroker):
    """Issues the credentials, then the answer is lost (a remote failure mode)."""

    def issue_credentials(self, binding):
        super().issue_credentials(binding)
        raise OutcomeUnknown("the broker did not answer in time")


class SilentBroker(brokers.LocalFileBroker):
    def issue_credentials(self, binding):
        raise OutcomeUnknown("the broker did not answer in time")


@pytest.mark.parametrize(
    ("broker", "settled_as"), [(TimingOutBroker, "provisioned"), (SilentBroker, "failed")]
)
def test_a_broker_timeout_is_reconciled_never_left_unexplained(
    tenant_a, store, profile, regions, settings, broker, settled_as
):
    rule("allow", geographies=["IL"])
    settings.STEWARD_SECRET_BROKER = f"{__name__}.{broker.__name__}"
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    assert services.binding_provision(binding_id=binding.pk) == "uncertain"
    assert "timed out" in reload(binding).status_reason
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    with tenant_scope(tenant_a):
        UncertainEffect.objects.update(next_check_at=binding.created_at)
    assert reconcile_due() == 1
    binding = reload(binding)
    assert binding.status == settled_as
    assert bool(binding.key_reference) == (settled_as == "provisioned")


def test_a_rule_change_flags_violating_bindings_and_changes_none(
    tenant_a, tenant_b, store, profile, regions
):
    allow_eu = rule("allow", geographies=["EU", "IL"])
    in_eu = bind(tenant_a, store, profile, regions["westeurope"])
    in_il = bind(tenant_b, store, profile, regions["israelcentral"])
    for binding in (in_eu, in_il):
        services.binding_provision(binding_id=binding.pk)
    services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=in_eu)
    proposal = services.residency.RuleView(
        id=None,
        tenant_id=None,
        data_class_id=None,
        effect="allow",
        region_ids=frozenset(),
        geographies=frozenset({"IL"}),
    )
    preview = services.would_violate(services.proposed_rules(replacing=allow_eu, proposal=proposal))
    assert [b.pk for b, _ in preview] == [in_eu.pk]
    allow_eu.geographies = ["IL"]
    services.rule_save(actor=SYSTEM_ACTOR, rule=allow_eu, regions=[])
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


def test_no_secret_material_reaches_the_database_api_events_or_logs(
    tenant_a, store, profile, regions, local_broker, caplog
):
    caplog.set_level(logging.DEBUG)
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    services.binding_provision(binding_id=binding.pk)
    broker = brokers.LocalFileBroker()
    binding = reload(binding)
    secrets = [broker.read(binding.key_reference), broker.read(binding.connection_reference)]
    assert all(len(secret) > 20 for secret in secrets)
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        dumped = []
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT t::text FROM "{table}" AS t')  # noqa: S608 - catalog names
            dumped += [row[0] for row in cursor.fetchall()]
    from rest_framework.test import APIClient

    from tests.conftest import bearer
    from tests.factories import service_token

    api = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["stores:read"]))
    shown = api.get(f"/api/v1/stores/bindings/{binding.pk}/").content.decode()
    listed = api.get("/api/v1/stores/bindings/").content.decode()
    everything = "\n".join(dumped) + caplog.text + str(events()) + shown + listed
    assert binding.key_reference in everything  # the references are there
    for secret in secrets:
        assert secret not in everything
    # nor the password inside the connection string, on its own
    password = secrets[1].split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert len(password) > 20 and password not in everything


def test_a_requested_binding_is_flagged_too_and_a_rules_tenant_cannot_change(
    tenant_a, tenant_b, store, profile, regions
):
    from apps.core.errors import ValidationFailed

    allow = rule("allow", geographies=["EU"])
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    assert binding.status == "requested"
    allow.geographies = ["IL"]
    services.rule_save(actor=SYSTEM_ACTOR, rule=allow, regions=[])
    assert "westeurope" in reload(binding).violation
    mine = rule("allow", tenant=tenant_a, geographies=["IL"])
    mine.tenant = tenant_b
    with pytest.raises(ValidationFailed) as refused:
        services.rule_save(actor=SYSTEM_ACTOR, rule=mine, regions=[])
    assert refused.value.code == "tenant_immutable"


def test_without_a_scope_even_the_shared_rules_read_as_nothing(tenant_a):
    from apps.stores.models import ResidencyRule

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
    from datetime import timedelta

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
