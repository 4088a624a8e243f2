"""Steward's export bundles: what its own tables hold of the tenant, one JSON Lines file
per exported table, the audit trail redacted as a deletion would leave it."""

from __future__ import annotations

import json

from django.apps import apps
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from apps.core.scope import tenant_scope
from apps.governance import coverage
from apps.governance.models import GovernanceTask
from apps.governance.orders import archive_store
from apps.governance.steward_owner.deletion import BATCH
from apps.tenancy.audit import REDACTED
from apps.tenancy.models import AuditEvent


def redacted_audit_row(row: dict) -> dict:
    changes = row.get("changes")
    return {
        **row,
        "actor_label": REDACTED,
        "actor_user_id": None,
        "actor_service_id": None,
        "object_repr": REDACTED,
        "changes": {k: REDACTED for k in changes} if isinstance(changes, dict) else {},
    }


def write_export_bundles(task: GovernanceTask) -> list[dict]:
    """Write one JSON Lines file per exported table of the tenant into the export
    store, the audit trail redacted; each table in its own transaction, replacing what
    an earlier run of the task left. Returns the bundles' descriptions."""
    bundles = []
    for label in coverage.exported_tables():
        model = apps.get_model(label)
        field = coverage.tenant_field_of(model)
        key = archive_store.bundle_key(task.order_id, f"steward/steward-{label}.jsonl")
        rows = 0
        with tenant_scope(task.tenant_id), transaction.atomic():
            archive_store.delete_files([key])
            out = archive_store.FileWriter(
                tenant_id=task.tenant_id, order_id=task.order_id, key=key
            )
            with out:
                query = model.objects.filter(**{f"{field}_id": task.tenant_id}).order_by("pk")
                for row in query.values().iterator(chunk_size=BATCH):
                    if model is AuditEvent:
                        row = redacted_audit_row(row)
                    out.write(
                        (json.dumps(row, cls=DjangoJSONEncoder, sort_keys=True) + "\n").encode()
                    )
                    rows += 1
        bundles.append(
            {
                "owner": "steward",
                "store": "steward",
                "name": label,
                "format": "jsonl",
                "path": key,
                "rows": rows,
                "bytes": out.size,
                "sha256": out.sha256,
            }
        )
    return bundles
