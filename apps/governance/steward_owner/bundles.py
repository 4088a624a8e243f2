"""Steward's export bundles: what its own tables hold of the tenant, one JSON Lines file
per exported table, the audit trail redacted as a deletion would leave it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from apps.core.scope import tenant_scope
from apps.governance import coverage
from apps.governance.models import GovernanceTask
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


def write_export_bundles(task: GovernanceTask, directory: Path) -> list[dict]:
    """Write one JSON Lines file per exported table of the tenant into `directory`;
    the audit trail redacted. Returns the bundles' descriptions."""
    bundles = []
    for label in coverage.exported_tables():
        model = apps.get_model(label)
        field = coverage.tenant_field_of(model)
        path = directory / f"steward-{label}.jsonl"
        digest, size, rows = hashlib.sha256(), 0, 0
        with path.open("wb") as out, tenant_scope(task.tenant_id), transaction.atomic():
            query = model.objects.filter(**{f"{field}_id": task.tenant_id}).order_by("pk")
            for row in query.values().iterator(chunk_size=BATCH):
                if model is AuditEvent:
                    row = redacted_audit_row(row)
                line = (json.dumps(row, cls=DjangoJSONEncoder, sort_keys=True) + "\n").encode()
                out.write(line)
                digest.update(line)
                size += len(line)
                rows += 1
        bundles.append(
            {
                "owner": "steward",
                "store": "steward",
                "name": label,
                "format": "jsonl",
                "path": str(path.relative_to(settings.STEWARD_EXPORT_DIR)),
                "rows": rows,
                "bytes": size,
                "sha256": digest.hexdigest(),
            }
        )
    return bundles
