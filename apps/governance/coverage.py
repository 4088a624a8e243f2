"""What governance does with each of Steward's tenant-owned tables.

A tenant deletion runs in phases — derived stores, then artifacts and authoritative
stores, then audit redaction (audit evidence is redacted, never purged) — and an
export includes what is marked exported. Every model with a tenant foreign key is
listed here with its phase, whether it is exported and the retention rule that
expires its rows, or exempted with a reason. `tests/governance` fails for a tenant
model that is in neither list, so a new table cannot escape deletion and export by
being forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass

DERIVED = "derived"  # projections, indexes, queues, caches: rebuilt or worthless alone
AUTHORITATIVE = "authoritative"  # the tenant's records: control, runtime, model, integration
AUDIT_REDACTION = "audit_redaction"  # evidence: personal data replaced, entries kept
# The tenant's store bindings: released last, with the subscription, once every owner
# has finished with the stores they reach.
RELEASE = "release"
PHASES = (DERIVED, AUTHORITATIVE, AUDIT_REDACTION, RELEASE)


@dataclass(frozen=True)
class Coverage:
    phase: str
    exported: bool
    retention: str = ""  # the retention rule that expires rows before any deletion order


GOVERNED: dict[str, Coverage] = {
    "tenancy.Membership": Coverage(AUTHORITATIVE, exported=True),
    # Deleted after the audit entries naming them are redacted (they are referenced).
    "tenancy.ServiceAccount": Coverage(AUDIT_REDACTION, exported=True),
    "tenancy.TenantUserObjectPermission": Coverage(AUTHORITATIVE, exported=False),
    "tenancy.TenantGroupObjectPermission": Coverage(AUTHORITATIVE, exported=False),
    "tenancy.AuditEvent": Coverage(AUDIT_REDACTION, exported=True),
    "eventing.OutboxEvent": Coverage(DERIVED, exported=False, retention="outbox-dispatched"),
    "eventing.InboxEntry": Coverage(DERIVED, exported=False, retention="inbox-window"),
    "eventing.RecentEvent": Coverage(DERIVED, exported=False, retention="inbox-window"),
    "eventing.DeadLetter": Coverage(DERIVED, exported=True, retention="dead-letters-resolved"),
    "eventing.UncertainEffect": Coverage(AUTHORITATIVE, exported=False),
    "compute.ComputeBatch": Coverage(AUTHORITATIVE, exported=True),
    "compute.BatchCompletion": Coverage(DERIVED, exported=False),
    "compute.WorkflowBatchLink": Coverage(DERIVED, exported=False),
    "assets.Asset": Coverage(AUTHORITATIVE, exported=True),
    "assets.WorkflowCallback": Coverage(AUTHORITATIVE, exported=True),
    "stores.ResidencyRule": Coverage(AUTHORITATIVE, exported=True),
    "stores.StoreBinding": Coverage(RELEASE, exported=True),
    "stores.StoreBindingChange": Coverage(RELEASE, exported=True),
}

# Tenant-owned models governance leaves alone, each with the reason.
EXEMPT: dict[str, str] = {
    "governance.GovernanceOrder": "the order is the proof of the deletion: it outlives it",
    "governance.OrderApproval": "part of the order's proof, kept with it",
    "governance.EvidenceEntry": "the order's hash-chained evidence, kept as proof",
    "governance.GovernanceTask": "the tasks and their receipts are the order's proof",
    "governance.ExportArtifact": "the record of an export; its file is deleted with the tenant",
    "governance.LegalHold": "a legal hold is evidence that outlives the data it held",
}


def tenant_owned_models() -> list:
    """Every installed model with a foreign key to Tenant."""
    from django.apps import apps

    from apps.tenancy.models import Tenant

    return [
        model
        for model in apps.get_models()
        if any(f.many_to_one and f.related_model is Tenant for f in model._meta.concrete_fields)
    ]
