"""Residency: may this tenant's data of this class live in this region?

Deterministic and explained. The most specific rules that apply to the tenant and
data class decide: a rule for the tenant beats one for all tenants, then a rule for
the data class beats one for all data. An allow rule lists the regions (by name or
geography) allowed; at the same specificity a deny beats an allow, and an explicit
exception beats both. Nothing deciding means no: residency is allow-listed.
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

    @classmethod
    def proposed(cls, fields: dict) -> RuleView:
        """A rule not saved yet, from the fields it would be created with (those of
        services.rule_create; only `effect` is required)."""
        tenant, data_class = fields.get("tenant"), fields.get("data_class")
        return cls(
            id=None,
            tenant_id=tenant.pk if tenant else None,
            data_class_id=data_class.pk if data_class else None,
            effect=fields["effect"],
            region_ids=frozenset(r.pk for r in fields.get("regions", ())),
            geographies=frozenset(fields.get("geographies", ())),
            is_exception=fields.get("is_exception", False),
            reason=fields.get("reason", ""),
            label="the proposed rule",
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
    """`rules`: RuleViews (any may not apply); `region`: a Region.

    Level by level, most specific first (tenant and data class, tenant, data class,
    neither): at the first level whose rules say anything about the region, an
    exception covering it allows; otherwise a deny covering it refuses; otherwise an
    allow covering it allows; and allow rules that leave the region out refuse it
    (they are the level's list of allowed regions). A level with only denies that do
    not cover the region says nothing, and the next level decides. When no level
    decides, the answer is no: residency is allow-listed.
    """
    applicable = [
        rule
        for rule in rules
        if rule.tenant_id in (None, tenant_id) and rule.data_class_id in (None, data_class_id)
    ]
    for level in sorted({rule.specificity for rule in applicable}, reverse=True):
        # Sorted by id, so the same rules give the same verdict whatever their order.
        here = sorted(
            (rule for rule in applicable if rule.specificity == level), key=lambda r: r.id or 0
        )
        covering = [rule for rule in here if _covers(rule, region)]
        exception = next((r for r in covering if r.effect == "allow" and r.is_exception), None)
        deny = next((r for r in covering if r.effect == "deny"), None)
        allow = next((r for r in covering if r.effect == "allow"), None)
        if exception or deny or allow:
            rule = exception or deny or allow
            verb = "refuses" if rule is deny and not exception else "allows"
            kind = "exception" if rule.is_exception else "rule"
            detail = f" ({rule.reason})" if rule.reason else ""
            return ResidencyVerdict(
                verb == "allows",
                f"The {kind} for {_describe(rule)} {verb} region {region.slug}{detail}.",
                rule.id,
                rule.label,
            )
        listing = next((r for r in here if r.effect == "allow"), None)
        if listing is not None:
            return ResidencyVerdict(
                False,
                f"The rule for {_describe(listing)} allows only other regions, not {region.slug}.",
                listing.id,
                listing.label,
            )
    return ResidencyVerdict(
        False, f"No residency rule allows region {region.slug} for this tenant and data."
    )


def _covers(rule: RuleView, region) -> bool:
    return region.pk in rule.region_ids or region.jurisdiction in rule.geographies


def _describe(rule: RuleView) -> str:
    who = "this tenant" if rule.tenant_id is not None else "all tenants"
    what = "this data class" if rule.data_class_id else "all data"
    return f"{who} and {what}"
