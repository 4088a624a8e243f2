"""A deletion order completes only when it has reached every binding that ever held the
tenant's data: each has its owner's receipt or a stated reason it never held any. Until
then it waits, asks the owners not yet reached and says which bindings it waits for
(evidence, API, order page, the attention queue once overdue); the evidence names every
binding before the binding rows go."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import DomainError
from apps.core.scope import system_scope, tenant_scope
from apps.governance.attention import OverdueTasks
from apps.governance.models import EvidenceEntry, GovernanceTask
from apps.governance.orders import evidence, services
from apps.stores import services as stores
from apps.stores.models import Store, StoreBinding, StoreProfile
from tests.governance.factories import approved, complete, fresh, live_binding, open_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def memory_store(like: Store) -> Store:
    """A derived store (an agent's memory) owned by the `memory` service."""
    return Store.objects.create(
        slug="memory-vec",
        name="Memory",
        owning_service=type(like.owning_service).objects.get_or_create(name="memory")[0],
        data_class=like.data_class,
        category=Store.Category.DERIVED,
        workload_class="catalog",
    )


def run_phase(order, number):
    for task in open_tasks(order, number):
        if task.status in GovernanceTask.OPEN:
            complete(task)


def entries(order, kind):
    with system_scope():
        return list(EvidenceEntry.objects.filter(order=order, kind=kind).order_by("sequence"))


def test_a_binding_no_owner_was_asked_for_keeps_the_order_from_completing(
    bound, tenant_a, region, operator
):
    order = approved(tenant_a)
    memory = memory_store(bound["search"])
    profile = StoreProfile.objects.get(slug="pg")
    # stores refuses a binding for a tenant being deleted ...
    with pytest.raises(DomainError) as refused:
        stores.binding_set(
            actor=SYSTEM_ACTOR,
            tenant=tenant_a,
            store=memory,
            profile=profile,
            region=region,
        )
    assert refused.value.code == "tenant_offboarding"
    run_phase(order, 1)
    # ... and a binding that got in all the same after phase 1 (as one did before the
    # refusal) is Active: no phase asks its owner
    late = live_binding(tenant_a, memory, profile)
    for number in (2, 3, 4):
        run_phase(order, number)

    # the order does not complete: it waits for the binding and says so
    order = fresh(order)
    assert order.status == "running" and order.completed_at is None
    assert fresh(late).status == "retired"  # released with the others in phase 4
    waiting = entries(order, "waiting_for_erasure")
    assert [b["binding"] for b in waiting[-1].data["bindings"]] == [str(late.pk)]
    assert waiting[-1].data["bindings"][0]["store"] == "memory-vec"
    assert waiting[-1].data["bindings"][0]["owner"] == "memory"
    assert not entries(order, "completed")
    asked = [t for t in open_tasks(order, 4) if t.owner == "memory"]
    assert len(asked) == 1 and asked[0].kind == "delete"
    assert asked[0].detail["binding"] == str(late.pk)

    # the API and the order page name the binding waited for
    api = APIClient()
    api.force_login(operator)
    body = api.get(f"/api/v1/governance/orders/{order.pk}/").json()
    assert [(w["store"], w["owner"], w["binding"]) for w in body["waiting_for"]] == [
        ("memory-vec", "memory", str(late.pk))
    ]
    page = Client()
    page.force_login(operator)
    html = page.get(order.get_absolute_url()).content.decode()
    assert "Waiting for bindings not yet reached" in html and "memory-vec" in html

    # its owner never answers: past its due time the order is overdue, and the task
    # waits in the attention queue
    with tenant_scope(tenant_a):
        GovernanceTask.objects.filter(pk=asked[0].pk).update(
            due_at=timezone.now() - timedelta(minutes=1)
        )
    assert services.flag_overdue_owner_tasks() == 1
    assert fresh(order).status == "overdue"
    with system_scope():
        assert asked[0].pk in {t.pk for t in OverdueTasks().waiting()}
    with system_scope():
        assert StoreBinding.objects.filter(pk=late.pk).exists()  # the evidence needs it

    # the owner's receipt at last: the order completes, the evidence names it
    complete(fresh(asked[0]))
    order = fresh(order)
    assert order.status == "completed"
    covered = entries(order, "erasure_covered")
    assert len(covered) == 1
    named = {b["binding"]: b for b in covered[0].data["bindings"]}
    assert named[str(late.pk)]["covered"] is True
    assert named[str(late.pk)]["receipt"]["task"] == str(asked[0].pk)
    with system_scope():
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()
        assert evidence.verify(evidence.document(order)) == (True, None)


def test_the_evidence_names_every_binding_with_its_owner_receipt_and_reason(
    bound, tenant_a, region
):
    profile = StoreProfile.objects.get(slug="pg")
    refused = live_binding(tenant_a, memory_store(bound["search"]), profile, status="refused")
    with tenant_scope(tenant_a):
        bindings = {
            b.store.slug: str(b.pk) for b in StoreBinding.objects.select_related("store").all()
        }
    order = approved(tenant_a)
    for number in (1, 2, 3, 4):
        run_phase(order, number)
    order = fresh(order)
    assert order.status == "completed"

    [covered] = entries(order, "erasure_covered")
    [done] = entries(order, "completed")
    assert covered.sequence < done.sequence  # read before the binding rows went
    named = {b["store"]: b for b in covered.data["bindings"]}
    assert {s: b["binding"] for s, b in named.items()} == bindings
    for slug, owner in (
        ("search-index", "search"),
        ("orders-sql", "orders"),
        ("audit-archive", "audit-log"),
    ):
        entry = named[slug]
        assert entry["owner"] == owner and entry["covered"] is True
        assert entry["reason"] == f"{owner}'s receipt says the data is gone."
        assert entry["receipt"]["owner"] == owner and entry["receipt"]["digest"] == "ab" * 32
        assert entry["receipt"]["order"] == str(order.pk)
    assert named["memory-vec"]["binding"] == str(refused.pk)
    assert named["memory-vec"]["owner"] == "memory" and named["memory-vec"]["receipt"] is None
    assert "never held the data" in named["memory-vec"]["reason"]
    with system_scope():
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()


def test_a_requested_binding_is_retired_by_the_deletion(bound, tenant_a):
    profile = StoreProfile.objects.get(slug="pg")
    requested = live_binding(tenant_a, memory_store(bound["search"]), profile, status="requested")
    order = approved(tenant_a)
    for number in (1, 2, 3):
        run_phase(order, number)
    # phase 4: Steward retires the Requested binding (its provisioning cancelled)
    # instead of failing on it
    [steward] = [t for t in open_tasks(order, 4) if t.owner == "steward"]
    complete(steward)
    assert fresh(steward).status == "completed"
    assert fresh(requested).status == "retired"
    run_phase(order, 4)
    assert fresh(order).status == "completed"
