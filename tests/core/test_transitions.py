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
    "eventing.UncertainEffect",
    "eventing.DeadLetter",
    "governance.RetentionSweep",
    "tenancy.Tenant",
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


def test_a_table_tells_the_statuses_that_may_move_to_a_status():
    table = Transitions(initial=["a"], moves={"a": {"b"}, "b": set(), "c": {"b"}})
    assert table.sources("b") == ["a", "c"] and table.sources("a") == []
    assert table.allows("a", "b") and not table.allows("b", "a")
    assert table.targets("a") == {"b"} and table.targets("b") == set()


def _asset(tenant):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    with tenant_scope(tenant):
        return Asset.objects.create(tenant=tenant, name="ledger", status=Asset.Status.DRAFT)


def test_move_changes_the_row_when_its_status_may_move(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    asset = _asset(tenant_a)
    with tenant_scope(tenant_a):
        moved = Asset.TRANSITIONS.move(asset, Asset.Status.REQUESTED, description="asked")
        stored = Asset.objects.get(pk=asset.pk)
    assert moved is asset and asset.status == Asset.Status.REQUESTED
    assert (stored.status, stored.description) == (Asset.Status.REQUESTED, "asked")


def test_move_refuses_a_row_that_has_moved_on_and_changes_nothing(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    asset = _asset(tenant_a)
    stale = Asset(pk=asset.pk, tenant_id=asset.tenant_id, status=Asset.Status.DRAFT)
    with tenant_scope(tenant_a):
        Asset.TRANSITIONS.move(asset, Asset.Status.REQUESTED)
        # a second move from the same (now stale) status loses the race
        with pytest.raises(InvalidTransition) as refused:
            Asset.TRANSITIONS.move(
                stale,
                Asset.Status.REQUESTED,
                detail=lambda found: f"now {found}",
                code="asset_moved_on",
                description="never written",
            )
        stored = Asset.objects.get(pk=asset.pk)
    assert refused.value.code == "asset_moved_on"
    assert refused.value.detail == "now requested"
    assert refused.value.extra == {"status": "requested"}
    assert stale.status == "requested"
    assert stored.description != "never written"


def test_move_with_extra_as_a_function_gives_every_member_of_the_refusal(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    asset = _asset(tenant_a)
    with tenant_scope(tenant_a), pytest.raises(InvalidTransition) as refused:
        Asset.TRANSITIONS.move(
            asset,
            Asset.Status.RETIRED,
            extra=lambda found: {"allowed": sorted(Asset.TRANSITIONS.targets(found))},
        )
    assert refused.value.extra == {"allowed": ["requested"]}
    assert refused.value.detail == "This object is draft and cannot become retired."


def test_move_from_narrows_the_statuses_the_table_allows_and_widens_none(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    draft, rejected = _asset(tenant_a), _asset(tenant_a)
    requested = Asset.Status.REQUESTED
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=rejected.pk).update(status=Asset.Status.REJECTED)
        # draft may become requested by the table, but not by this use case
        with pytest.raises(InvalidTransition) as refused:
            Asset.TRANSITIONS.move(draft, requested, from_=[Asset.Status.REJECTED])
        Asset.TRANSITIONS.move(rejected, requested, from_=[Asset.Status.REJECTED])
        # a status the table does not let move to `to` stays refused, named or not
        with pytest.raises(InvalidTransition):
            Asset.TRANSITIONS.move(rejected, requested, from_=[requested])
        stored = dict(Asset.objects.values_list("pk", "status"))
    assert refused.value.extra == {"status": "draft"}
    assert refused.value.detail == "This object is draft and cannot become requested."
    assert stored == {draft.pk: "draft", rejected.pk: "requested"}


def test_delete_from_narrows_the_deletable_statuses(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    draft = _asset(tenant_a)
    with tenant_scope(tenant_a):
        with pytest.raises(InvalidTransition) as refused:
            Asset.TRANSITIONS.delete(draft, from_=[Asset.Status.REJECTED])
        Asset.TRANSITIONS.delete(draft, from_=[Asset.Status.DRAFT])
        remaining = Asset.objects.count()
    assert refused.value.extra == {"status": "draft"} and remaining == 0


def test_move_many_moves_each_row_that_may_move_once_and_tells_which(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    draft, other, retired = _asset(tenant_a), _asset(tenant_a), _asset(tenant_a)
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=retired.pk).update(status=Asset.Status.RETIRED)
        Asset.objects.filter(pk=other.pk).update(workflow_link_stale=True)

        def batch():
            return Asset.TRANSITIONS.move_many(
                Asset,
                [
                    {"id": row.pk, "to": Asset.Status.REQUESTED, "description": f"asked {n}"}
                    for n, row in enumerate((draft, other, retired))
                ],
                by="id",
                where={"workflow_link_stale": False},
                returning=("name",),
                decided_by="batch",
            )

        [moved] = batch()
        assert batch() == []  # moved already: a second batch finds nothing to move
        stored = {a.pk: a for a in Asset.objects.all()}
    assert (moved.pk, moved.status, moved.name) == (draft.pk, "requested", "ledger")
    assert (stored[draft.pk].description, stored[draft.pk].decided_by) == ("asked 0", "batch")
    assert stored[other.pk].status == "draft" and stored[other.pk].description == ""
    assert stored[retired.pk].status == "retired"


def test_move_many_takes_each_move_from_its_own_target_s_sources(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    draft, requested, other = _asset(tenant_a), _asset(tenant_a), _asset(tenant_a)
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk__in=[requested.pk, other.pk]).update(status="requested")
        moved = Asset.TRANSITIONS.move_many(
            Asset,
            [
                {"id": draft.pk, "to": Asset.Status.APPROVED},  # draft may not be approved
                {"id": requested.pk, "to": Asset.Status.REQUESTED},  # nor requested again
                {"id": other.pk, "to": Asset.Status.APPROVED},
            ],
            by="id",
        )
        stored = dict(Asset.objects.values_list("pk", "status"))
    assert [row.pk for row in moved] == [other.pk]
    assert stored == {draft.pk: "draft", requested.pk: "requested", other.pk: "approved"}


def test_move_many_writes_what_then_says_over_the_moved_rows_alone(tenant_a):
    from apps.assets.models import Asset
    from apps.core.context import SYSTEM_ACTOR
    from apps.core.scope import tenant_scope
    from apps.tenancy.audit import Moved, audit_moved
    from apps.tenancy.models import AuditEvent

    draft, retired = _asset(tenant_a), _asset(tenant_a)
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=retired.pk).update(status=Asset.Status.RETIRED)
        [moved] = Asset.TRANSITIONS.move_many(
            Asset,
            [
                {"id": row.pk, "to": Asset.Status.REQUESTED, "n": n}
                for n, row in enumerate((draft, retired))
            ],
            by="id",
            carry=("n",),
            then=audit_moved(
                Asset,
                actor=SYSTEM_ACTOR,
                action="asset.{status}",
                object_repr="{name}!",
                changes={"status": ["draft", Moved("status")], "n": [None, Moved("n")]},
            ),
        )
        [audit] = AuditEvent.objects.all()
    assert (moved.pk, moved.status) == (draft.pk, "requested")
    assert (audit.tenant_id, audit.actor_label, audit.action) == (
        tenant_a.pk,
        "steward",
        "asset.requested",
    )
    assert (audit.object_type, audit.object_id, audit.object_repr) == (
        "assets.asset",
        str(draft.pk),
        "ledger!",
    )
    assert audit.changes == {"status": ["draft", "requested"], "n": [None, 0]}


def test_delete_ends_a_row_only_in_a_deletable_status(tenant_a):
    from apps.assets.models import Asset
    from apps.core.scope import tenant_scope

    draft, requested = _asset(tenant_a), _asset(tenant_a)
    with tenant_scope(tenant_a):
        Asset.TRANSITIONS.move(requested, Asset.Status.REQUESTED)
        with pytest.raises(InvalidTransition) as refused:
            Asset.TRANSITIONS.delete(requested, code="not_deletable")
        # the refusal leaves the caller's transaction usable
        deleted = Asset.TRANSITIONS.delete(draft)
        remaining = list(Asset.objects.values_list("pk", flat=True))
    assert refused.value.code == "not_deletable"
    assert refused.value.extra == {"status": "requested"}
    assert refused.value.detail == "This object is requested and cannot be deleted."
    assert deleted.pk == draft.pk and deleted.status == "draft"
    assert remaining == [requested.pk]
