"""The phases of governance orders, and who is asked what in each.

A deletion runs four phases, each starting only when every task of the one before has
completed with a receipt: derived stores, then artifacts and authoritative stores,
then audit redaction (audit evidence is redacted, never purged), then the commercial
service closes the subscription while Steward releases the tenant's store bindings
(revoking their credentials: every owner is done with the stores). An export has one
phase in which every owner contributes a bundle. Owners are the services owning the
stores the tenant has live bindings of, and Steward itself for its own tables
(apps.core.governed, read through apps.governance.coverage).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from apps.core.governed import AUDIT_REDACTION, AUTHORITATIVE, DERIVED, RELEASE
from apps.governance import coverage
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.registry.catalog import STEWARD_SERVICE
from apps.stores.selectors import live_binding_list

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
EXPORT = (Phase(1, "bundles", "Bundles", Kind.EXPORT, ("authoritative", "audit"), "export"),)


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
    """Who is asked in phase `number`: one task per live binding of the phase's store
    categories (to the store's owning service), Steward's own, and in the last deletion
    phase the commercial service."""
    step = phase(order, number)
    found = []
    if step.store_categories:
        bindings = (
            live_binding_list()
            .filter(tenant_id=order.tenant_id, store__category__in=step.store_categories)
            .order_by("store__slug")
        )
        found += [
            Assignment(
                owner=b.store.owning_service.name,
                kind=step.task_kind,
                store_id=b.store_id,
                detail={
                    "store": b.store.slug,
                    "binding": str(b.pk),
                    "region": b.region.slug,
                    "connection_reference": b.connection_reference,
                },
            )
            for b in bindings
        ]
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


def steward_tables(step: Phase) -> list[str]:
    if step.steward_coverage == "export":
        return coverage.exported_tables()
    return coverage.tables_of_phase(step.steward_coverage)
