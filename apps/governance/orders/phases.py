"""The phases of governance orders, and who is asked what in each.

A deletion runs four phases, each starting only when every task of the one before has
completed with a receipt: derived stores, then artifacts and authoritative stores,
then audit redaction (audit evidence is redacted, never purged), then the commercial
service closes the subscription while Steward releases the tenant's store bindings
(revoking their credentials: every owner is done with the stores). An export has one
phase in which every owner contributes a bundle. Owners are the services owning the
stores that hold or held the tenant's data -- live bindings and retired ones whose
owner has not yet sent the receipt saying the data is gone
(apps.stores.selectors.bindings_holding_tenant_data) -- and Steward itself for its own
tables (apps.core.governed, read through apps.governance.coverage). A retired binding's
task says so in its detail (`retired`, `binding_status`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from apps.core.governed import AUDIT_REDACTION, AUTHORITATIVE, DERIVED, RELEASE
from apps.governance import coverage
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.registry.catalog import STEWARD_SERVICE
from apps.stores.models import LIVE_STATUSES
from apps.stores.selectors import bindings_holding_tenant_data

Kind = GovernanceTask.Kind


@dataclass(frozen=True)
class Phase:
    number: int
    slug: str
    title: str
    task_kind: str
    store_categories: tuple[str, ...]  # the bindings whose owners are asked
    steward_coverage: str = ""  # Steward's own tables of this phase (apps.core.governed phase)


DELETION = (
    Phase(1, "derived", "Derived stores", Kind.DELETE, ("derived",), DERIVED),
    Phase(
        2,
        "authoritative",
        "Artifacts and authoritative stores",
        Kind.DELETE,
        ("authoritative",),
        AUTHORITATIVE,
    ),
    Phase(3, "audit", "Audit redaction", Kind.REDACT, ("audit",), AUDIT_REDACTION),
    Phase(
        4,
        "subscription",
        "Subscription closed",
        Kind.CLOSE_SUBSCRIPTION,
        (),
        RELEASE,
    ),
)
# Every store category may hold personal data -- a derived store too: a memory, a
# search index or a cache keeps copies of the tenant's records -- so an export asks the
# owner of every store bound for the tenant, whatever its category; what it leaves out
# by design, the manifest lists with the reason (apps.governance.orders.exports).
EXPORT = (
    Phase(1, "bundles", "Bundles", Kind.EXPORT, ("derived", "authoritative", "audit"), "export"),
)


def phases_of(kind: str) -> tuple[Phase, ...]:
    return DELETION if kind == GovernanceOrder.Kind.DELETION else EXPORT


def phase(order: GovernanceOrder, number: int | None = None) -> Phase:
    return phases_of(order.kind)[(number or order.phase) - 1]


@dataclass(frozen=True)
class Assignment:
    owner: str
    kind: str
    store_id: int | None
    detail: dict


def assignments(order: GovernanceOrder, number: int) -> list[Assignment]:
    """Who is asked in phase `number`: one task per binding of the phase's store
    categories that holds or held the tenant's data (to the store's owning service),
    retired ones included until their data is recorded gone, Steward's own, and in the
    last deletion phase the commercial service. An export asks live bindings only and
    retired ones whose data is not yet purged alike: the data is still there."""
    step = phase(order, number)
    found = []
    if step.store_categories:
        bindings = (
            bindings_holding_tenant_data(order.tenant_id)
            .filter(store__category__in=step.store_categories, data_purged_at__isnull=True)
            .order_by("store__slug", "created_at", "id")
        )
        found += [binding_assignment(b, step.task_kind) for b in bindings]
    if step.steward_coverage:
        found.append(
            Assignment(
                owner=STEWARD_SERVICE,
                # Steward's part of closing the subscription: releasing the bindings.
                kind=Kind.DELETE if step.task_kind == Kind.CLOSE_SUBSCRIPTION else step.task_kind,
                store_id=None,
                detail={"store": "steward", "tables": steward_tables(step)},
            )
        )
    if step.task_kind == Kind.CLOSE_SUBSCRIPTION:
        found.append(
            Assignment(
                owner=settings.STEWARD_COMMERCIAL_SERVICE,
                kind=step.task_kind,
                store_id=None,
                detail={},
            )
        )
    return found


def binding_assignment(binding, kind: str) -> Assignment:
    """The task asking a binding's owner for `kind` (delete, redact, export), naming the
    binding and whether it is still live."""
    return Assignment(
        owner=binding.store.owning_service.name,
        kind=kind,
        store_id=binding.store_id,
        detail={
            "store": binding.store.slug,
            "binding": str(binding.pk),
            "region": binding.region.slug,
            "connection_reference": binding.connection_reference,
            "binding_status": binding.status,
            "retired": binding.status not in LIVE_STATUSES,
        },
    )


def purge_receipt(task: GovernanceTask) -> dict:
    """What a retired binding records as the proof its data is gone: the owner's receipt,
    named by the task that carried it."""
    return {
        "task": str(task.pk),
        "order": str(task.order_id) if task.order_id else None,
        "kind": task.kind,
        "owner": task.owner,
        **task.receipt,
    }


def steward_tables(step: Phase) -> list[str]:
    if step.steward_coverage == "export":
        return coverage.exported_tables()
    return coverage.tables_of_phase(step.steward_coverage)
