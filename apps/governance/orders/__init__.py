"""Governance orders (tenant deletion and export) and the owner tasks they issue: the
request and its approvals, the phases, the evidence chain, the export archive."""
