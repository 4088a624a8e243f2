"""What governance does with its own tenant-owned tables (apps.core.governed): it keeps
them, as the proof of what it did."""

from apps.core.governed import Coverage

GOVERNED: dict[str, Coverage] = {}
EXEMPT = {
    "governance.GovernanceOrder": "the order is the proof of the deletion: it outlives it",
    "governance.OrderApproval": "part of the order's proof, kept with it",
    "governance.EvidenceEntry": "the order's hash-chained evidence, kept as proof",
    "governance.GovernanceTask": "the tasks and their receipts are the order's proof",
    "governance.ExportArtifact": "the record of an export; its file is deleted with the tenant",
    "governance.LegalHold": "a legal hold is evidence that outlives the data it held",
}
