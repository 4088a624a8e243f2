"""Governance's models, one module per part (app_label "governance" for all, so no table
moves): orders and their owner tasks, and retention."""

from apps.governance.models.orders import (
    EvidenceEntry,
    ExportArtifact,
    ExportChunk,
    GovernanceOrder,
    GovernanceTask,
    OrderApproval,
)
from apps.governance.models.retention import LegalHold, RetentionRule, RetentionSweep

__all__ = [
    "EvidenceEntry",
    "ExportArtifact",
    "ExportChunk",
    "GovernanceOrder",
    "GovernanceTask",
    "LegalHold",
    "OrderApproval",
    "RetentionRule",
    "RetentionSweep",
]
