"""Every stateful model declares its moves in one table of one shape
(apps.core.transitions); this reads each table against the model it belongs to."""

from collections import deque

import pytest
from django.apps import apps

from apps.core.errors import InvalidTransition
from apps.core.transitions import Transitions

# The models whose status is a state machine (docs/architecture.md, "The rules of the house").
STATEFUL = {
    "assets.Asset",
    "stores.StoreBinding",
    "governance.GovernanceOrder",
    "governance.GovernanceTask",
    "compute.ComputeBatch",
    "registry.SchemaVersion",
}


def tables():
    return {
        model._meta.label: model
        for model in apps.get_models()
        if isinstance(getattr(model, "TRANSITIONS", None), Transitions)
    }


def test_every_stateful_model_has_a_table():
    assert set(tables()) >= STATEFUL


@pytest.mark.parametrize("label", sorted(STATEFUL))
def test_the_table_names_every_status_and_only_those(label):
    model = apps.get_model(label)
    table = model.TRANSITIONS
    statuses = {value for value, _ in model._meta.get_field(table.field).choices}
    # each status has a row (terminal ones an empty set), and no row or move names a
    # status the field does not have
    assert table.statuses == statuses
    assert set().union(*table.moves.values()) <= statuses
    assert table.initial and table.initial <= statuses


@pytest.mark.parametrize("label", sorted(STATEFUL))
def test_every_status_is_reachable_from_an_initial_one(label):
    table = apps.get_model(label).TRANSITIONS
    seen, queue = set(table.initial), deque(table.initial)
    while queue:
        for target in table.targets(queue.popleft()):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    assert seen == table.statuses, f"unreachable: {sorted(table.statuses - seen)}"


@pytest.mark.parametrize("label", sorted(STATEFUL))
def test_a_model_field_default_is_an_initial_status(label):
    model = apps.get_model(label)
    field = model._meta.get_field(model.TRANSITIONS.field)
    if field.has_default():  # a field without one is set by the service that creates the row
        assert field.default in model.TRANSITIONS.initial


def test_an_illegal_move_raises_invalid_transition_with_both_statuses():
    table = Transitions(initial=["a"], moves={"a": {"b"}, "b": set()})
    table.check("a", "b")
    assert table.sources("b") == ["a"]
    with pytest.raises(InvalidTransition) as refused:
        table.check("b", "a")
    assert refused.value.status == 409
    assert refused.value.extra == {"status_from": "b", "status_to": "a"}
