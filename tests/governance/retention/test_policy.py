"""The retention policy without the database: holds beat rules, the longest retention
wins, locked rules refuse shortening. Table-driven, then property-based."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.governance.retention.policy import (
    ACTION_RANK,
    HoldView,
    RuleLocked,
    RuleView,
    Target,
    check_locked,
    effective_rule,
    hold_covers,
    locked_refusals,
    plan_retention,
    rule_covers,
)

NOW = datetime(2026, 11, 30, 2, 30, tzinfo=UTC)
DUE = timedelta(hours=72)
TENANT, OTHER = "t-1", "t-2"
# store 1 and 2 hold class 10 (personal), store 3 holds class 20
STORE_CLASS = {1: 10, 2: 10, 3: 20}


def target(store=1, tenant=TENANT):
    return Target(tenant_id=tenant, store_id=store, data_class_id=STORE_CLASS[store])


def rule(name, days, action="delete", *, store=None, data_class=None, enabled=True, locked=False):
    return RuleView(
        id=hash(name) % 1000,
        name=name,
        period_days=days,
        action=action,
        store_id=store,
        data_class_id=data_class,
        enabled=enabled,
        locked=locked,
    )


def hold(tenant=TENANT, *, store=None, data_class=None):
    return HoldView(
        id=f"h-{tenant}-{store}-{data_class}",
        tenant_id=tenant,
        store_id=store,
        data_class_id=data_class,
        reason="litigation",
    )


def plan(rules, holds=(), targets=(None,)):
    targets = [target() if t is None else t for t in targets]
    return plan_retention(rules=rules, holds=list(holds), targets=targets, as_of=NOW, due_after=DUE)


# --------------------------------------------------------------------------- table-driven

RULES_CASES = [
    # (case, rules, expected winner name or None)
    ("no rule", [], None),
    ("store rule", [rule("s", 30, store=1)], "s"),
    ("class rule", [rule("c", 30, data_class=10)], "c"),
    ("other store's rule", [rule("s3", 30, store=3)], None),
    ("other class's rule", [rule("c20", 30, data_class=20)], None),
    ("disabled rule", [rule("off", 30, store=1, enabled=False)], None),
    ("longest wins: class longer", [rule("s", 30, store=1), rule("c", 90, data_class=10)], "c"),
    ("longest wins: store longer", [rule("s", 400, store=1), rule("c", 90, data_class=10)], "s"),
    (
        "a disabled longer rule does not count",
        [rule("s", 30, store=1), rule("c", 900, data_class=10, enabled=False)],
        "s",
    ),
    (
        "tie: archive beats redact beats delete",
        [
            rule("a-del", 30, "delete", store=1),
            rule("b-arc", 30, "archive", data_class=10),
            rule("c-red", 30, "redact", store=1),
        ],
        "b-arc",
    ),
    (
        "tie: redact beats delete",
        [rule("del", 30, "delete", store=1), rule("red", 30, "redact", data_class=10)],
        "red",
    ),
    (
        "longer delete beats shorter archive",
        [rule("arc", 30, "archive", store=1), rule("del", 31, "delete", store=1)],
        "del",
    ),
    ("store and class naming the same store", [rule("both", 60, store=1, data_class=10)], "both"),
    ("store and another class cover nothing", [rule("both", 60, store=1, data_class=20)], None),
]


@pytest.mark.parametrize(("case", "rules", "winner"), RULES_CASES, ids=[c[0] for c in RULES_CASES])
def test_the_longest_retention_wins(case, rules, winner):
    chosen = effective_rule(rules, target())
    assert (chosen.name if chosen else None) == winner
    result = plan(rules)
    if winner is None:
        assert result.purges == [] and result.uncovered == [target()]
    else:
        [purge] = result.purges
        assert purge.rule.name == winner
        assert purge.cutoff == NOW - timedelta(days=purge.rule.period_days)
        assert purge.due_at == NOW + DUE


HOLD_CASES = [
    # (case, holds, held?)
    ("no hold", [], False),
    ("tenant-wide hold", [hold()], True),
    ("same store", [hold(store=1)], True),
    ("same data class", [hold(data_class=10)], True),
    ("store and class of that store", [hold(store=1, data_class=10)], True),
    ("another store of the same class", [hold(store=2)], False),
    ("another data class", [hold(data_class=20)], False),
    ("another tenant's tenant-wide hold", [hold(OTHER)], False),
    ("another tenant's hold on the store", [hold(OTHER, store=1)], False),
    ("one of several covers", [hold(OTHER), hold(store=3), hold(data_class=10)], True),
]


@pytest.mark.parametrize(("case", "holds", "held"), HOLD_CASES, ids=[c[0] for c in HOLD_CASES])
def test_a_hold_beats_every_rule(case, holds, held):
    # the strictest rule set there is: several rules, one locked, all covering the target
    rules = [rule("short", 1, store=1), rule("locked", 7, data_class=10, locked=True)]
    result = plan(rules, holds)
    if held:
        assert result.purges == []
        [entry] = result.held
        assert entry.rule.name == "locked"  # the rule that would otherwise apply
        assert set(entry.holds) == {h for h in holds if hold_covers(h, target())}
    else:
        assert [p.rule.name for p in result.purges] == ["locked"] and result.held == []


LOCK_CASES = [
    # (case, change to a locked rule of 30 days / delete / class 10, refused fields)
    ("lengthen", {"period_days": 31}, []),
    ("same period (a no-op)", {}, []),
    ("shorten", {"period_days": 29}, ["period_days"]),
    ("shorten to 1 day", {"period_days": 1}, ["period_days"]),
    ("disable", {"enabled": False}, ["enabled"]),
    ("unlock", {"locked": False}, ["locked"]),
    ("unlock and shorten", {"locked": False, "period_days": 5}, ["period_days", "locked"]),
    ("change action", {"action": "archive"}, ["action"]),
    ("narrow scope to a store", {"store_id": 1}, ["store_id"]),
    ("move to another class", {"data_class_id": 20}, ["data_class_id"]),
    ("lengthen and disable", {"period_days": 60, "enabled": False}, ["enabled"]),
]


@pytest.mark.parametrize(("case", "change", "refused"), LOCK_CASES, ids=[c[0] for c in LOCK_CASES])
def test_a_locked_rule_refuses_all_but_lengthening(case, change, refused):
    before = rule("kept", 30, data_class=10, locked=True)
    after = RuleView(**{**before.__dict__, **change})
    assert locked_refusals(before, after) == refused
    if refused:
        with pytest.raises(RuleLocked) as raised:
            check_locked(before, after)
        assert raised.value.code == "retention_rule_locked"
        assert raised.value.extra["refused"] == [name.removesuffix("_id") for name in refused]
    else:
        check_locked(before, after)


def test_a_locked_rule_cannot_be_deleted_and_an_unlocked_one_changes_freely():
    locked = rule("kept", 30, data_class=10, locked=True)
    assert locked_refusals(locked, None) == ["deleted"]
    free = rule("free", 30, data_class=10)
    shorter = RuleView(**{**free.__dict__, "period_days": 1, "enabled": False, "store_id": 3})
    assert locked_refusals(free, shorter) == [] and locked_refusals(free, None) == []
    # locking is one way, but locking itself is a change an unlocked rule accepts
    assert locked_refusals(free, RuleView(**{**free.__dict__, "locked": True})) == []


# --------------------------------------------------------------------------- properties

stores = st.sampled_from(sorted(STORE_CLASS))
classes = st.sampled_from(sorted(set(STORE_CLASS.values())))
actions = st.sampled_from(sorted(ACTION_RANK))


@st.composite
def rules_st(draw):
    scope = draw(st.sampled_from(["store", "class", "both"]))
    store = draw(stores) if scope != "class" else None
    data_class = draw(classes) if scope != "store" else None
    if scope == "both":
        data_class = STORE_CLASS[store]
    return RuleView(
        id=None,
        name=draw(st.text("abcdefgh", min_size=1, max_size=6)),
        period_days=draw(st.integers(1, 3650)),
        action=draw(actions),
        store_id=store,
        data_class_id=data_class,
        enabled=draw(st.booleans()),
        locked=draw(st.booleans()),
    )


holds_st = st.builds(
    HoldView,
    id=st.uuids(),
    tenant_id=st.sampled_from([TENANT, OTHER]),
    store_id=st.none() | stores,
    data_class_id=st.none() | classes,
)
targets_st = st.builds(
    lambda store, tenant: target(store, tenant), stores, st.sampled_from([TENANT, OTHER])
)


@given(
    st.lists(rules_st(), max_size=8, unique_by=lambda r: r.name),
    st.lists(holds_st, max_size=4),
    st.lists(targets_st, max_size=6),
)
def test_every_target_is_purged_held_or_uncovered_once_and_holds_always_win(rules, holds, targets):
    result = plan_retention(rules=rules, holds=holds, targets=targets, as_of=NOW, due_after=DUE)
    accounted = (
        [p.target for p in result.purges] + [h.target for h in result.held] + result.uncovered
    )
    assert sorted(map(repr, accounted)) == sorted(map(repr, targets))
    for purge in result.purges:
        assert not any(hold_covers(h, purge.target) for h in holds)  # a hold always wins
    for held in result.held:
        assert held.holds and all(hold_covers(h, held.target) for h in held.holds)


@given(st.lists(rules_st(), min_size=1, max_size=8, unique_by=lambda r: r.name), targets_st)
def test_the_chosen_rule_keeps_at_least_as_long_as_every_covering_rule(rules, chosen_target):
    chosen = effective_rule(rules, chosen_target)
    covering = [r for r in rules if rule_covers(r, chosen_target)]
    if not covering:
        assert chosen is None
        return
    assert chosen in covering
    for other in covering:
        assert chosen.period_days >= other.period_days
        if other.period_days == chosen.period_days:
            assert ACTION_RANK[chosen.action] >= ACTION_RANK[other.action]
    # adding a shorter covering rule never changes the outcome; order never matters
    shorter = RuleView(
        **{**chosen.__dict__, "name": "zz-shorter", "period_days": 1, "action": "delete"}
    )
    if chosen.period_days > 1:
        assert effective_rule([*rules, shorter], chosen_target) == chosen
    assert effective_rule(list(reversed(rules)), chosen_target) == chosen


@given(rules_st(), st.integers(1, 3650), st.booleans(), st.booleans(), actions)
def test_a_locked_rule_never_keeps_less_after_an_accepted_change(
    before, days, enabled, locked, action
):
    after = RuleView(
        **{
            **before.__dict__,
            "period_days": days,
            "enabled": enabled,
            "locked": locked,
            "action": action,
        }
    )
    refusals = locked_refusals(before, after)
    if before.locked and not refusals:
        assert after.period_days >= before.period_days
        assert after.enabled and after.locked and after.action == before.action
    if not before.locked:
        assert refusals == []
