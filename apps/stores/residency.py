"""Residency: may this tenant's data of this class live in this region?

Deterministic and explained. Of the rules that cover the region (by naming it or its
geography) and apply to the tenant and data class, the most specific decides: a rule
for the tenant beats one for all tenants, then a rule for the data class beats one
for all data. At the same specificity a deny beats an allow. When no rule covers the
region, the answer is no: residency is allow-listed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RuleView:
    """What evaluation needs of a rule (so a preview can evaluate unsaved rules)."""

    id: int | None
    tenant_id: object | None
    data_class_id: int | None
    effect: str
    region_ids: frozenset
    geographies: frozenset
    is_exception: bool = False
    reason: str = ""
    label: str = ""

    @classmethod
    def of(cls, rule) -> RuleView:
        return cls(
            id=rule.pk,
            tenant_id=rule.tenant_id,
            data_class_id=rule.data_class_id,
            effect=rule.effect,
            region_ids=frozenset(r.pk for r in rule.regions.all()),
            geographies=frozenset(rule.geographies),
            is_exception=rule.is_exception,
            reason=rule.reason,
            label=str(rule),
        )

    @property
    def specificity(self) -> int:
        return (2 if self.tenant_id is not None else 0) + (1 if self.data_class_id else 0)


@dataclass(frozen=True)
class ResidencyVerdict:
    allowed: bool
    explanation: str
    rule_id: int | None = None
    rule: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def evaluate_residency(rules, *, tenant_id, data_class_id, region) -> ResidencyVerdict:
    """`rules`: RuleViews (any may not apply); `region`: a Region."""
    covering = [
        rule
        for rule in rules
        if rule.tenant_id in (None, tenant_id)
        and rule.data_class_id in (None, data_class_id)
        and (region.pk in rule.region_ids or (region.jurisdiction in rule.geographies))
    ]
    if not covering:
        return ResidencyVerdict(
            False, f"No residency rule allows region {region.slug} for this tenant and data."
        )
    top = max(rule.specificity for rule in covering)
    # Sorted by id, so the same rules give the same verdict whatever order they came in.
    deciding = sorted(
        (rule for rule in covering if rule.specificity == top), key=lambda r: r.id or 0
    )
    deny = next((rule for rule in deciding if rule.effect == "deny"), None)
    rule = deny or deciding[0]
    scope = _describe(rule)
    verb = "denies" if deny else "allows"
    detail = f" ({rule.reason})" if rule.reason else ""
    kind = "exception" if rule.is_exception else "rule"
    explanation = f"The {kind} for {scope} {verb} region {region.slug}{detail}."
    return ResidencyVerdict(not deny, explanation, rule.id, rule.label)


def _describe(rule: RuleView) -> str:
    who = "this tenant" if rule.tenant_id is not None else "all tenants"
    what = "this data class" if rule.data_class_id else "all data"
    return f"{who} and {what}"
