"""An export asks the owner of every store that may hold the tenant's personal data,
derived stores included, and its manifest lists what it left out by design: each store
of the tenant not asked and each of Steward's own tables not exported, with the reason."""

import json

import pytest

from apps.core.governed import exempt_tables, governed_tables
from apps.governance.orders import exports
from apps.stores.models import Store, StoreProfile
from tests.governance.factories import (
    approved,
    complete,
    live_binding,
    open_tasks,
    stored_archive,
)

pytestmark = pytest.mark.django_db


def test_a_derived_stores_owner_is_asked_and_the_manifest_says_what_was_left_out(bound, tenant_a):
    profile = StoreProfile.objects.get(slug="pg")
    cache = Store.objects.create(
        slug="session-cache",
        name="Session cache",
        owning_service=bound["search"].owning_service,
        data_class=bound["search"].data_class,
        category=Store.Category.DERIVED,
        workload_class="catalog",
    )
    refused = live_binding(tenant_a, cache, profile, status="refused")

    order = approved(tenant_a, kind="export")
    tasks = {t.detail.get("store"): t for t in open_tasks(order, 1)}
    # the derived search-index's owner is asked for its bundle like the others
    assert set(tasks) == {"search-index", "orders-sql", "audit-archive", "steward"}
    assert tasks["search-index"].owner == "search" and tasks["search-index"].kind == "export"
    for task in tasks.values():
        complete(task)
    assert exports.export_archive_assemble(order_id=order.pk) == "assembled"

    manifest = json.loads(stored_archive(order).read("manifest.json"))
    left_out = manifest["not_included"]
    assert left_out and {e["reason"] for e in left_out} == {"by_design"}
    stores = [e for e in left_out if e["owner"] != "steward"]
    assert stores == [
        {
            "owner": "search",
            "store": "session-cache",
            "binding": str(refused.pk),
            "reason": "by_design",
            "detail": "Refused when requested: it never held the data.",
        }
    ]
    tables = {e["store"]: e["detail"] for e in left_out if e["owner"] == "steward"}
    expected = {label for label, c in governed_tables().items() if not c.exported}
    assert set(tables) == expected | set(exempt_tables())
    assert tables["eventing.InboxEntry"].startswith("derived:")
    assert "bookkeeping" in tables["eventing.UncertainEffect"]
    assert tables["governance.EvidenceEntry"] == (
        "kept by Steward: " + exempt_tables()["governance.EvidenceEntry"]
    )
    assert all(why for why in tables.values())
