"""What governance does with its own tenant-owned tables (apps.core.governed): it keeps
them, as the proof of what it did."""

from apps.core.governed import DERIVED, Coverage

GOVERNED: dict[str, Coverage] = {
    # Copies of the tenant's records on their way into an archive, or the archive: the
    # export store (apps.governance.orders.archive_store).
    "governance.ExportChunk": Coverage(
        DERIVED, exported=False, retention="steward-export-archives"
    ),
}
EXEMPT = {
    "governance.GovernanceOrder": "the order is the proof of the deletion: it outlives it",
    "governance.OrderApproval": "part of the order's proof, kept with it",
    "governance.EvidenceEntry": "the order's hash-chained evidence, kept as proof",
    "governance.GovernanceTask": "the tasks and their receipts are the order's proof",
    "governance.ExportArtifact": "the record of an export; its bytes are deleted with the tenant",
    "governance.LegalHold": "a legal hold is evidence that outlives the data it held",
}
# A bundle of an export still running waits for its archive, however old. Archives'
# chunks go with their records (sweeper.EXPORTS); the chunk table's own rule takes the
# bundles an order left behind (cancelled before its archive was built).
OPEN_WORK = {
    "governance.ExportChunk": (
        "order_id IN (SELECT id FROM governance_governanceorder"
        " WHERE status IN ('running', 'overdue'))"
    ),
}
