"""Compliance enforced at the edges (issue #16): a binding the rules in force do not
allow is neither provisioned nor made Active; a flagged binding waits on an operator's
decision (retire, or an exception with a reason and an expiry that ends by itself);
ending a certification re-evaluates the bindings that relied on it; and a retired
binding keeps the record of where the tenant's data lived until the owner's receipt."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.stores import selectors, services
from apps.stores.models import ResidencyRule, StoreBinding
from apps.tenancy.models import AuditEvent
from tests.stores.conftest import events, reload
from tests.stores.factories import (
    another_profile,
    bind,
    provisioned,
    record_evidence,
    rule,
    stores_like,
)

pytestmark = pytest.mark.django_db


def narrow(allow, geographies):
    """Change a rule behind the services' back, as if the change raced the worker."""
    with system_scope():
        ResidencyRule.objects.filter(pk=allow.pk).update(geographies=geographies)


def flagged_active(tenant, store, profile, regions):
    """An Active binding in Europe, flagged when the default rule narrows to Israel."""
    allow = rule("allow", geographies=["EU", "IL"])
    binding = provisioned(tenant, store, profile, regions["westeurope"])
    binding = services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    return allow, reload(binding)


# --------------------------------------------------------------------------- enforcement


def test_the_worker_does_not_provision_what_the_rules_no_longer_allow(
    tenant_a, store, profile, regions, local_broker
):
    allow = rule("allow", geographies=["EU"])
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    narrow(allow, ["IL"])
    assert services.binding_provision(binding_id=binding.pk) == "refused"
    refused = reload(binding)
    assert refused.status == "requested" and refused.key_reference == ""
    assert refused.status_reason.startswith("Not provisioned: ")
    assert "westeurope" in refused.violation
    assert refused.status_reason == f"Not provisioned: {refused.violation}"
    assert not (local_broker / str(binding.pk)).exists()
    [announced] = events("ResidencyViolationDetected")
    assert announced["binding_id"] == str(binding.pk)
    # The sweep asks again, and again refuses, announcing nothing new.
    assert services.binding_provision(binding_id=binding.pk) == "refused"
    assert len(events("ResidencyViolationDetected")) == 1
    # Allowed again, the flag clears and the worker provisions it.
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["EU"], regions=[])
    assert reload(binding).violation == ""
    assert services.binding_provision(binding_id=binding.pk) == "succeeded"
    assert reload(binding).status == "provisioned"


def test_a_provisioned_binding_the_rules_refuse_cannot_become_active(
    tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    with pytest.raises(Conflict) as refused:
        services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=reload(binding))
    assert refused.value.code == "residency_violation"
    assert "westeurope" in refused.value.detail
    assert refused.value.extra["explanation"] == refused.value.detail
    assert refused.value.extra["rule_id"] == allow.pk
    kept = reload(binding)
    assert kept.status == "provisioned"
    with tenant_scope(tenant_a):
        assert kept.history.count() == 2  # requested, provisioned: nothing more


def test_a_binding_whose_evidence_ended_cannot_be_provisioned_or_become_active(
    tenant_a, store, regions
):
    rule("allow", geographies=["IL"])
    profile = another_profile(provides_retention_cleanup=True)
    store.workload_class = "queue"
    store.save()
    record = services.certification_record(
        actor=SYSTEM_ACTOR, profile=profile, workload_class="queue", benchmark_reference="BM-7"
    )
    record_evidence(profile, "queue")
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    services.certification_revoke(actor=SYSTEM_ACTOR, record=record)
    with pytest.raises(Conflict) as refused:
        services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=reload(binding))
    assert refused.value.code == "workload_not_allowed"
    assert reload(binding).status == "provisioned"


# --------------------------------------------------------------------------- decisions


def test_a_flagged_binding_awaits_a_decision_and_an_exception_clears_it(
    tenant_a, store, profile, regions
):
    _, binding = flagged_active(tenant_a, store, profile, regions)
    assert binding.status == "active" and binding.awaits_decision
    with system_scope():
        assert list(selectors.bindings_awaiting_decision()) == [binding]
    until = timezone.now() + timedelta(days=30)
    excepted = services.binding_grant_exception(
        actor=SYSTEM_ACTOR, binding=binding, reason="DPA signed for EU hosting", expires_at=until
    )
    assert excepted.violation == "" and not excepted.awaits_decision
    assert excepted.exception_in_force()
    assert excepted.exception_reason == "DPA signed for EU hosting"
    with system_scope():
        assert not selectors.bindings_awaiting_decision().exists()
        audit = AuditEvent.objects.get(action="store_binding.grant_exception")
    assert audit.changes["exception_reason"] == [None, "DPA signed for EU hosting"]
    assert "westeurope" in audit.changes["violation"][0]
    with tenant_scope(tenant_a):
        note = excepted.history.last()
    assert note.from_status == note.to_status == "active"
    assert "Residency exception granted" in note.reason
    [granted] = events("ResidencyExceptionGranted")  # a pager or a ledger can follow it
    assert granted["reason"] == "DPA signed for EU hosting"
    assert granted["expires_at"] == until.isoformat()
    assert "westeurope" in granted["violation"]
    # While in force, a rule check neither flags it nor announces it again.
    services.flag_violations()
    assert reload(binding).violation == ""
    assert len(events("ResidencyViolationDetected")) == 1


def test_the_exception_ends_by_itself_at_its_expiry_and_flags_the_binding_again(
    tenant_a, store, profile, regions
):
    _, binding = flagged_active(tenant_a, store, profile, regions)
    until = timezone.now() + timedelta(hours=1)
    services.binding_grant_exception(
        actor=SYSTEM_ACTOR, binding=binding, reason="migration window", expires_at=until
    )
    assert services.expire_exceptions() == []  # not yet
    [ended] = services.expire_exceptions(now=until + timedelta(seconds=1))
    assert ended.pk == binding.pk
    again = reload(binding)
    assert again.exception_ended_at is not None and not again.exception_in_force()
    assert "westeurope" in again.violation and again.awaits_decision
    assert len(events("ResidencyViolationDetected")) == 2
    with system_scope():
        assert AuditEvent.objects.filter(action="store_binding.exception_expired").count() == 1
    assert len(events("ResidencyExceptionExpired")) == 1
    assert services.expire_exceptions(now=until + timedelta(seconds=2)) == []  # once


def test_an_exception_lets_a_refused_requested_binding_be_provisioned(
    tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    narrow(allow, ["IL"])
    services.binding_provision(binding_id=binding.pk)
    services.binding_grant_exception(
        actor=SYSTEM_ACTOR,
        binding=reload(binding),
        reason="one quarter",
        expires_at=timezone.now() + timedelta(days=90),
    )
    assert services.binding_provision(binding_id=binding.pk) == "succeeded"
    assert reload(binding).status == "provisioned"


def test_the_other_decision_is_retiring_the_binding(tenant_a, store, profile, regions):
    _, binding = flagged_active(tenant_a, store, profile, regions)
    services.binding_retire(actor=SYSTEM_ACTOR, binding=binding, reason="residency")
    services.binding_revoke(binding_id=binding.pk)
    assert reload(binding).status == "retired" and not reload(binding).awaits_decision


@pytest.mark.parametrize(
    ("reason", "expiry", "code"),
    [
        ("", timedelta(days=1), "reason_required"),
        ("  ", timedelta(days=1), "reason_required"),
        ("ok", -timedelta(seconds=1), "invalid_expiry"),
        ("ok", None, "invalid_expiry"),
    ],
)
def test_an_exception_needs_a_reason_and_a_future_expiry(
    tenant_a, store, profile, regions, reason, expiry, code
):
    _, binding = flagged_active(tenant_a, store, profile, regions)
    with pytest.raises(ValidationFailed) as refused:
        services.binding_grant_exception(
            actor=SYSTEM_ACTOR,
            binding=binding,
            reason=reason,
            expires_at=None if expiry is None else timezone.now() + expiry,
        )
    assert refused.value.code == code
    assert reload(binding).violation and not reload(binding).exception_reason


def test_only_a_flagged_live_binding_is_granted_an_exception(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    later = timezone.now() + timedelta(days=1)
    with pytest.raises(Conflict) as compliant:
        services.binding_grant_exception(
            actor=SYSTEM_ACTOR, binding=binding, reason="x", expires_at=later
        )
    assert compliant.value.code == "not_flagged"
    services.binding_retire(actor=SYSTEM_ACTOR, binding=reload(binding))
    with pytest.raises(Conflict) as retiring:
        services.binding_grant_exception(
            actor=SYSTEM_ACTOR, binding=reload(binding), reason="x", expires_at=later
        )
    assert retiring.value.code == "binding_not_live"
    assert reload(binding).exception_reason == ""


# --------------------------------------------------------------------------- certifications


def queue_binding(tenant, store, regions, **certification):
    profile = another_profile(provides_retention_cleanup=True)
    store.workload_class = "queue"
    store.save()
    record = services.certification_record(
        actor=SYSTEM_ACTOR,
        profile=profile,
        workload_class="queue",
        benchmark_reference="BM-9",
        **certification,
    )
    record_evidence(profile, "queue")
    binding = provisioned(tenant, store, profile, regions["israelcentral"])
    return record, services.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)


def test_revoking_a_certification_re_evaluates_and_flags_the_bindings_relying_on_it(
    tenant_a, tenant_b, store, profile, regions
):
    rule("allow", geographies=["IL"])
    record, relying = queue_binding(tenant_a, store, regions)
    assert relying.workload_verdict["certification_id"] == record.pk
    catalog = another_profile()
    [other_store] = stores_like(store, 1)
    other_store.workload_class = "catalog"
    other_store.save()
    untouched = provisioned(tenant_b, other_store, catalog, regions["israelcentral"])
    services.certification_revoke(actor=SYSTEM_ACTOR, record=record)
    flagged = reload(relying)
    assert flagged.status == "active" and "certification of profile" in flagged.workload_violation
    assert flagged.workload_violation_detected_at is not None and flagged.awaits_decision
    assert reload(untouched).workload_violation == ""
    with tenant_scope(tenant_a):
        assert "Workload evidence withdrawn" in flagged.history.last().reason
    # Certified again, the binding passes on the new evidence and is cleared.
    fresh = services.certification_record(
        actor=SYSTEM_ACTOR,
        profile=record.profile,
        workload_class="queue",
        benchmark_reference="BM-10",
    )
    services.reevaluate_workload(certification=fresh)
    cleared = reload(relying)
    assert cleared.workload_violation == ""
    assert cleared.workload_verdict["evidence"] == "BM-10"


def test_an_expiring_certification_ends_by_itself_and_flags_its_bindings(tenant_a, store, regions):
    rule("allow", geographies=["IL"])
    soon = timezone.now() + timedelta(hours=1)
    record, relying = queue_binding(tenant_a, store, regions, expires_at=soon)
    assert services.expire_certifications() == []
    [ended] = services.expire_certifications(now=soon + timedelta(seconds=1))
    assert ended.pk == record.pk and ended.revoked_at is not None
    assert reload(relying).workload_violation
    with system_scope():
        assert AuditEvent.objects.filter(action="profile.expire_certification").count() == 1
    with pytest.raises(ValidationFailed) as past:
        services.certification_record(
            actor=SYSTEM_ACTOR,
            profile=record.profile,
            workload_class="queue",
            benchmark_reference="BM-11",
            expires_at=timezone.now() - timedelta(days=1),
        )
    assert past.value.code == "invalid_expiry"


# --------------------------------------------------------------------------- data held


def test_a_retired_binding_is_listed_as_holding_data_until_the_owners_receipt(
    tenant_a, tenant_b, store, profile, regions
):
    rule("allow", geographies=["IL", "US"])
    retired = provisioned(tenant_a, store, profile, regions["israelcentral"])
    services.binding_retire(actor=SYSTEM_ACTOR, binding=reload(retired))
    services.binding_revoke(binding_id=retired.pk)
    refused = bind(tenant_a, store, another_profile(), regions["westeurope"])
    assert reload(refused).status == "refused"
    live = bind(tenant_a, store, profile, regions["israelcentral"])
    bind(tenant_b, store, profile, regions["israelcentral"])
    with system_scope():
        held = list(selectors.bindings_holding_tenant_data(tenant_a.pk))
    assert [b.pk for b in held] == [retired.pk, live.pk]
    assert held[0].status == "retired" and held[0].data_purged_at is None
    with pytest.raises(Conflict) as still_live:
        services.binding_record_data_purged(actor=SYSTEM_ACTOR, binding=live, receipt={"task": 1})
    assert still_live.value.code == "binding_live"
    purged = services.binding_record_data_purged(
        actor=SYSTEM_ACTOR, binding=held[0], receipt={"task": 7, "outcome": "deleted"}
    )
    assert purged.data_purged_at is not None
    assert purged.data_purge_receipt == {"task": 7, "outcome": "deleted"}
    again = services.binding_record_data_purged(
        actor=SYSTEM_ACTOR, binding=held[0], receipt={"task": 8}
    )
    assert again.data_purge_receipt == {"task": 7, "outcome": "deleted"}  # recorded once
    with system_scope():
        assert AuditEvent.objects.filter(action="store_binding.data_purged").count() == 1
        # Still listed: the record of where the data lived is kept, now with its receipt.
        assert selectors.bindings_holding_tenant_data(tenant_a.pk).count() == 2
    with tenant_scope(tenant_b):
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()
