"""Retention policy, without the database: which rule governs a tenant's store, whether
a legal hold stops it, what tonight's sweep issues, and which rule changes a lock refuses.

- A rule covers a tenant's store binding when it is enabled and names that store, or
  that store's data class (a rule naming both names a store of that class).
- Several rules covering the same data: the longest retention wins; at equal length
  the most conservative action (archive > redact > delete), then the rule's name.
- A hold always wins: an active hold of the tenant covering the store (tenant-wide,
  the same store, or the store's data class) means no purge; the target is listed as
  held, with the holds.
- A locked rule may be lengthened, nothing else: no shorter period, no other scope or
  action, never disabled, unlocked or deleted.
- Steward's own tables are data like an owner's store: each table holds one of
  Steward's data classes (`steward-…`), so the rules naming that class decide it (a
  rule naming a store never does), and the holds of a tenant that are tenant-wide or
  name that class keep the tenant's rows (own_table_decision).

The inputs are plain views so the rules can be tested table-driven and property-based;
apps.governance.retention.selectors turns rows into views and plans, and
apps.governance.retention.services plans into work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from apps.core.errors import Conflict
from apps.governance.codes import GovernanceCode

# The more conservative action wins a tie in period: archive keeps most, delete least.
ACTION_RANK = {"delete": 0, "redact": 1, "archive": 2}


@dataclass(frozen=True)
class RuleView:
    id: int | None
    name: str
    period_days: int
    action: str
    data_class_id: int | None = None
    store_id: int | None = None
    locked: bool = False
    enabled: bool = True

    @classmethod
    def of(cls, rule) -> RuleView:
        return cls(
            id=rule.pk,
            name=rule.name,
            period_days=rule.period_days,
            action=rule.action,
            data_class_id=rule.data_class_id,
            store_id=rule.store_id,
            locked=rule.locked,
            enabled=rule.enabled,
        )


@dataclass(frozen=True)
class HoldView:
    id: object
    tenant_id: object
    data_class_id: int | None = None
    store_id: int | None = None
    reason: str = ""

    @classmethod
    def of(cls, hold) -> HoldView:
        return cls(
            id=hold.pk,
            tenant_id=hold.tenant_id,
            data_class_id=hold.data_class_id,
            store_id=hold.store_id,
            reason=hold.reason,
        )


@dataclass(frozen=True)
class Target:
    """A tenant's live store binding: the data a purge task would be about."""

    tenant_id: object
    store_id: int | None  # None: one of Steward's own tables
    data_class_id: int
    owning_service_id: int | None = None
    binding_id: object = None
    labels: tuple[tuple[str, str], ...] = ()  # (name, value) for display: tenant, store…

    def label(self, name: str, default: str = "") -> str:
        return dict(self.labels).get(name, default)


@dataclass(frozen=True)
class PlannedPurge:
    target: Target
    rule: RuleView
    cutoff: datetime  # data older than this is due
    due_at: datetime  # by when the owning service should report its receipt

    @property
    def action(self) -> str:
        return self.rule.action


@dataclass(frozen=True)
class HeldTarget:
    target: Target
    rule: RuleView  # the rule that would otherwise apply
    holds: tuple[HoldView, ...]


@dataclass
class Plan:
    as_of: datetime
    purges: list[PlannedPurge] = field(default_factory=list)
    held: list[HeldTarget] = field(default_factory=list)
    uncovered: list[Target] = field(default_factory=list)  # no enabled rule covers them


def rule_covers(rule: RuleView, target: Target) -> bool:
    if not rule.enabled or (rule.store_id is None and rule.data_class_id is None):
        return False
    return (rule.store_id is None or rule.store_id == target.store_id) and (
        rule.data_class_id is None or rule.data_class_id == target.data_class_id
    )


def hold_covers(hold: HoldView, target: Target) -> bool:
    return (
        str(hold.tenant_id) == str(target.tenant_id)
        and (hold.store_id is None or hold.store_id == target.store_id)
        and (hold.data_class_id is None or hold.data_class_id == target.data_class_id)
    )


def strictness(rule: RuleView) -> tuple:
    """Orders rules by how much they keep: longer first, then the conservative action;
    the name makes the choice between otherwise equal rules stable."""
    return (rule.period_days, ACTION_RANK[rule.action], _reverse(rule.name))


def _reverse(name: str) -> tuple[int, ...]:
    # max() picks the alphabetically first name among equals.
    return tuple(-ord(c) for c in name)


def effective_rule(rules: Iterable[RuleView], target: Target) -> RuleView | None:
    covering = [rule for rule in rules if rule_covers(rule, target)]
    return max(covering, key=strictness) if covering else None


def plan_retention(
    *,
    rules: Sequence[RuleView],
    holds: Sequence[HoldView],
    targets: Sequence[Target],
    as_of: datetime,
    due_after: timedelta,
) -> Plan:
    """What a sweep at `as_of` issues: one purge per target its effective rule governs,
    unless an active hold covers the target."""
    plan = Plan(as_of=as_of)
    for target in targets:
        rule = effective_rule(rules, target)
        if rule is None:
            plan.uncovered.append(target)
            continue
        holding = tuple(hold for hold in holds if hold_covers(hold, target))
        if holding:
            plan.held.append(HeldTarget(target=target, rule=rule, holds=holding))
            continue
        plan.purges.append(
            PlannedPurge(
                target=target,
                rule=rule,
                cutoff=as_of - timedelta(days=rule.period_days),
                due_at=as_of + due_after,
            )
        )
    return plan


@dataclass(frozen=True)
class OwnDecision:
    """What decides the retention of one of Steward's own tables: the effective rule of
    its data class (None: no enabled rule, its rows are kept), the cutoff it gives, and
    the tenants whose rows an active hold keeps."""

    rule: RuleView | None
    cutoff: datetime | None
    holds: tuple[HoldView, ...] = ()

    @property
    def held_tenants(self) -> frozenset[str]:
        return frozenset(str(hold.tenant_id) for hold in self.holds)


def own_table_decision(
    *, rules: Sequence[RuleView], holds: Sequence[HoldView], data_class_id, as_of: datetime
) -> OwnDecision:
    """The rules and holds, applied to a table of Steward's own that holds
    `data_class_id` (None: the class is not installed, so no rule can name it)."""
    if data_class_id is None:
        return OwnDecision(rule=None, cutoff=None)
    rule = effective_rule(rules, Target(tenant_id=None, store_id=None, data_class_id=data_class_id))
    holding = tuple(
        hold
        for hold in holds
        if hold_covers(
            hold, Target(tenant_id=hold.tenant_id, store_id=None, data_class_id=data_class_id)
        )
    )
    cutoff = as_of - timedelta(days=rule.period_days) if rule else None
    return OwnDecision(rule=rule, cutoff=cutoff, holds=holding)


# --------------------------------------------------------------------------- locked rules


class RuleLocked(Conflict):
    """A change a locked rule refuses; `refused` names what was asked."""

    code = GovernanceCode.RETENTION_RULE_LOCKED
    title = "The retention rule is locked"


REFUSALS = {
    "period_days": "its period can be lengthened, never shortened",
    "enabled": "it cannot be disabled",
    "locked": "it cannot be unlocked",
    "data_class_id": "its scope cannot change",
    "store_id": "its scope cannot change",
    "action": "its action cannot change",
    "deleted": "it cannot be deleted",
}


def locked_refusals(before: RuleView, after: RuleView | None) -> list[str]:
    """What of the change from `before` to `after` (None: deletion) a lock refuses;
    empty when `before` is not locked or the change only lengthens the period."""
    if not before.locked:
        return []
    if after is None:
        return ["deleted"]
    refused = []
    if after.period_days < before.period_days:
        refused.append("period_days")
    if not after.enabled:
        refused.append("enabled")
    if not after.locked:
        refused.append("locked")
    for name in ("data_class_id", "store_id", "action"):
        if getattr(after, name) != getattr(before, name):
            refused.append(name)
    return refused


def check_locked(before: RuleView, after: RuleView | None) -> None:
    refused = locked_refusals(before, after)
    if refused:
        reasons = "; ".join(dict.fromkeys(REFUSALS[name] for name in refused))
        raise RuleLocked(
            f"Rule {before.name!r} is locked: {reasons}.",
            refused=[name.removesuffix("_id") for name in refused],
        )
