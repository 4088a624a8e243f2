"""The stores selectors: evaluations and previews that change nothing."""

import pytest

from apps.core.scope import system_scope
from apps.stores import selectors
from apps.stores.models import StoreBinding
from tests.stores.factories import provisioned, rule

pytestmark = pytest.mark.django_db


def test_what_if_without_a_profile_says_only_what_residency_says(tenant_a, store, regions):
    rule("allow", geographies=["IL"])
    with system_scope():
        answer = selectors.what_if(tenant=tenant_a, store=store, region=regions["eastus"])
    assert answer["allowed"] is False and answer["workload"] is None
    assert "eastus" in answer["residency"]["explanation"]


def test_a_rule_preview_names_the_bindings_a_proposal_would_refuse(
    tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["IL", "EU"])
    in_eu = provisioned(tenant_a, store, profile, regions["westeurope"])
    affected = selectors.rule_preview(replacing=allow, effect="allow", geographies=["IL"])
    assert [(b.pk, "westeurope" in v.explanation) for b, v in affected] == [(in_eu.pk, True)]
    everywhere = selectors.rule_preview(effect="allow", geographies=["EU"])
    assert everywhere == []  # added beside the rule in force, it refuses nothing
    with system_scope():
        assert StoreBinding.objects.get(pk=in_eu.pk).violation == ""


def test_the_live_bindings_leave_out_the_refused_and_the_retired(
    tenant_a, tenant_b, store, profile, regions
):
    rule("allow", geographies=["IL"])
    live = provisioned(tenant_a, store, profile, regions["israelcentral"])
    provisioned(tenant_b, store, profile, regions["eastus"])  # refused
    with system_scope():
        assert [b.pk for b in selectors.live_binding_list()] == [live.pk]
