"""Residency precedence: the most specific rule covering the region decides; a deny
beats an allow at the same specificity; nothing covering it means no."""

import pytest

from apps.stores.residency import RuleView, evaluate_residency
from apps.tenancy.models import Region

T, OTHER, PERSONAL, TELEMETRY = "tenant-t", "tenant-o", 1, 2
IL = Region(pk=1, slug="israelcentral", jurisdiction="IL")
EU = Region(pk=2, slug="westeurope", jurisdiction="EU")


def rule(n, effect, *, tenant=None, data=None, regions=(), geos=(), exception=False):
    return RuleView(
        is_exception=exception,
        id=n,
        tenant_id=tenant,
        data_class_id=data,
        effect=effect,
        region_ids=frozenset(r.pk for r in regions),
        geographies=frozenset(geos),
        label=f"rule {n}",
    )


ALL_IL = rule(1, "allow", geos=["IL"])
ALL_EU = rule(2, "allow", regions=[EU])
DENY_PERSONAL_EU = rule(3, "deny", data=PERSONAL, regions=[EU])
T_ALLOW_EU = rule(4, "allow", tenant=T, regions=[EU])
T_DENY_IL = rule(5, "deny", tenant=T, geos=["IL"])
T_ALLOW_IL = rule(6, "allow", tenant=T, regions=[IL])
T_PERSONAL_ALLOW_IL = rule(7, "allow", tenant=T, data=PERSONAL, regions=[IL])

# (rules, tenant, data class, region) -> (allowed, deciding rule id)
CASES = [
    ([], T, PERSONAL, IL, False, None),  # nothing allows it: allow-listed
    ([ALL_IL], T, PERSONAL, IL, True, 1),  # by geography
    ([ALL_IL], T, PERSONAL, EU, False, 1),  # the allow list leaves EU out
    ([ALL_EU], OTHER, TELEMETRY, EU, True, 2),  # by region
    ([ALL_EU, DENY_PERSONAL_EU], T, PERSONAL, EU, False, 3),  # data class beats all data
    ([ALL_EU, DENY_PERSONAL_EU], T, TELEMETRY, EU, True, 2),  # the deny is for personal
    ([DENY_PERSONAL_EU, T_ALLOW_EU], T, PERSONAL, EU, True, 4),  # tenant beats data class
    ([DENY_PERSONAL_EU, T_ALLOW_EU], OTHER, PERSONAL, EU, False, 3),  # not that tenant
    ([T_ALLOW_IL, T_DENY_IL], T, PERSONAL, IL, False, 5),  # same level: deny wins
    ([T_DENY_IL, T_PERSONAL_ALLOW_IL], T, PERSONAL, IL, True, 7),  # most specific of all
    ([T_DENY_IL, T_PERSONAL_ALLOW_IL], T, TELEMETRY, IL, False, 5),
    ([ALL_IL, T_DENY_IL], OTHER, PERSONAL, IL, True, 1),
    # a tenant's own allow list restricts it, whatever the default allows
    ([rule(9, "allow", geos=["IL", "EU"]), T_ALLOW_IL], T, PERSONAL, EU, False, 6),
    ([rule(9, "allow", geos=["IL", "EU"]), T_ALLOW_IL], OTHER, PERSONAL, EU, True, 9),
    # a level with only denies that leave the region out says nothing
    ([ALL_EU, T_DENY_IL], T, PERSONAL, EU, True, 2),
    # an exception beats a deny of the same specificity
    (
        [T_DENY_IL, rule(10, "allow", tenant=T, geos=["IL"], exception=True)],
        T,
        PERSONAL,
        IL,
        True,
        10,
    ),
]


@pytest.mark.parametrize(("rules", "tenant", "data", "region", "allowed", "decided_by"), CASES)
def test_the_most_specific_rule_decides_and_a_deny_wins_a_tie(
    rules, tenant, data, region, allowed, decided_by
):
    verdict = evaluate_residency(rules, tenant_id=tenant, data_class_id=data, region=region)
    assert (verdict.allowed, verdict.rule_id) == (allowed, decided_by)
    assert region.slug in verdict.explanation


def test_evaluation_does_not_depend_on_the_order_of_the_rules():
    rules = [ALL_EU, DENY_PERSONAL_EU, T_ALLOW_EU, rule(8, "allow", tenant=T, regions=[EU])]
    verdicts = {
        evaluate_residency(order, tenant_id=T, data_class_id=PERSONAL, region=EU)
        for order in (rules, rules[::-1], rules[1:] + rules[:1])
    }
    assert len(verdicts) == 1
