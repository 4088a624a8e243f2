"""Export orders: the owners' bundles in, one archive out.

Owners upload their bundle (JSON Lines, Parquet or Markdown) as the request body,
streamed into the export store (PostgreSQL, apps.governance.orders.archive_store) with
its size capped and its SHA-256 checked against the one they declare; Steward checks
the format reads and counts its rows. When no task of the
order is still awaited, the archive is assembled: one ZIP with every bundle and a
`manifest.json` listing what was included (owner, store, format, rows, bytes,
SHA-256) and what was not (owner, reason: declined, overdue, failed; or `by_design`: a
store of the tenant its owner was not asked for, and each of Steward's own tables the
export leaves out, each with the reason).
"""

from __future__ import annotations

import codecs
import io
import itertools
import json
import zipfile
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core.context import Actor
from apps.core.errors import DomainError, InvalidTransition, NotFound, ValidationFailed
from apps.core.governed import AUTHORITATIVE, DERIVED, exempt_tables, governed_tables
from apps.core.scope import system_scope, tenant_scope
from apps.governance.codes import GovernanceCode
from apps.governance.models import ExportArtifact, GovernanceOrder, GovernanceTask
from apps.governance.orders import archive_store, evidence, services
from apps.registry.catalog import STEWARD_SERVICE
from apps.stores.selectors import binding_erasure_coverage

FORMATS = {"jsonl": ".jsonl", "parquet": ".parquet", "markdown": ".md"}
# A bundle's format is its Content-Type.
MEDIA_TYPES = {
    "application/jsonl": "jsonl",
    "application/x-ndjson": "jsonl",
    "application/vnd.apache.parquet": "parquet",
    "text/markdown": "markdown",
}
CHUNK = archive_store.CHUNK
BY_DESIGN = "by_design"
# Why a table of Steward's own, registered as not exported, is left out, by its
# deletion phase (apps.core.governed).
NOT_EXPORTED = {
    DERIVED: "derived: a queue, projection or cache of records the export carries or "
    "Steward rebuilds; it holds nothing the tenant gave that is not exported elsewhere",
    AUTHORITATIVE: "Steward's own bookkeeping (object permissions, external calls being "
    "reconciled), not records of the tenant's",
}


class BundleTooLarge(DomainError):
    status = 413
    code = GovernanceCode.BUNDLE_TOO_LARGE
    title = "Bundle too large"


def _rows(stored: archive_store.FileReader, fmt: str) -> int | None:
    """The bundle's rows, proving it reads as its format; None for Markdown."""
    if fmt == "jsonl":
        rows = 0
        for number, line in enumerate(io.BufferedReader(stored, CHUNK), start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                raise ValidationFailed(
                    f"Line {number} of the bundle is not JSON.",
                    code=GovernanceCode.BUNDLE_UNREADABLE,
                ) from None
            rows += 1
        return rows
    if fmt == "parquet":
        import pyarrow.parquet as pq  # heavy: loaded by the processes that read Parquet

        try:
            return pq.ParquetFile(io.BufferedReader(stored, CHUNK)).metadata.num_rows
        except Exception:  # noqa: BLE001 - pyarrow raises several kinds for a bad file
            raise ValidationFailed(
                "The bundle is not a readable Parquet file.", code=GovernanceCode.BUNDLE_UNREADABLE
            ) from None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        while piece := stored.read(CHUNK):
            decoder.decode(piece)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ValidationFailed(
            "The Markdown bundle is not UTF-8.", code=GovernanceCode.BUNDLE_UNREADABLE
        ) from None
    return None


def export_bundle_receive(
    *, actor: Actor, task_id, stream, fmt: str, sha256: str, length: int | None
) -> GovernanceTask:
    """Store an owner's bundle for its export task and complete the task with it.

    Nothing is kept when the body is larger than allowed, its digest differs from the
    declared one, or it does not read as its format.
    """
    if fmt not in FORMATS:
        raise ValidationFailed(
            f"The Content-Type must be one of {', '.join(MEDIA_TYPES)}.",
            code=GovernanceCode.UNSUPPORTED_BUNDLE_TYPE,
        )
    sha256 = (sha256 or "").lower()
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValidationFailed(
            "Declare the bundle's SHA-256 (64 hex digits) in the Content-SHA256 header.",
            code=GovernanceCode.CHECKSUM_REQUIRED,
        )
    limit = settings.STEWARD_EXPORT_BUNDLE_MAX_BYTES
    if length is not None and length > limit:
        raise BundleTooLarge(f"A bundle may be at most {limit} bytes.", limit=limit)
    tenant_id = services.owner_task_tenant(task_id)
    # One transaction from the task's check to its completion: a bundle refused, broken
    # off or outraced leaves no chunk behind, and a completed task's bundle is stored.
    # The task is not locked meanwhile; owner_task_complete refuses a race lost.
    with tenant_scope(tenant_id), transaction.atomic():
        task = services.owner_task_for_caller(actor, task_id, for_update=False)
        waits = GovernanceTask.TRANSITIONS.allows(task.status, GovernanceTask.Status.COMPLETED)
        if task.kind != GovernanceTask.Kind.EXPORT or not waits:
            raise InvalidTransition("This task does not wait for a bundle.", status=task.status)
        key = archive_store.bundle_key(task.order_id, f"{task.owner}-{task.pk}{FORMATS[fmt]}")
        with archive_store.FileWriter(tenant_id=tenant_id, order_id=task.order_id, key=key) as out:
            while chunk := stream.read(CHUNK):
                if out.size + len(chunk) > limit:
                    raise BundleTooLarge(f"A bundle may be at most {limit} bytes.", limit=limit)
                out.write(chunk)
        if out.sha256 != sha256:
            raise ValidationFailed(
                "The bundle's SHA-256 is not the one declared.",
                code=GovernanceCode.CHECKSUM_MISMATCH,
                received=out.sha256,
            )
        stored = archive_store.FileReader(tenant_id=tenant_id, key=key, size=out.size)
        bundle = {
            "owner": task.owner,
            "store": task.detail.get("store") or task.owner,
            "name": task.detail.get("store") or task.owner,
            "format": fmt,
            "path": key,
            "rows": _rows(stored, fmt),
            "bytes": out.size,
            "sha256": sha256,
        }
        return services.owner_task_complete(
            actor=actor, task_id=task.pk, receipt={"bundles": [bundle]}
        )


def _member(bundle: dict) -> str:
    suffix = FORMATS[bundle["format"]]
    name = bundle["name"].removesuffix(suffix)
    return f"bundles/{bundle['owner']}/{name}{suffix}"


def export_manifest(order: GovernanceOrder, tasks: list[GovernanceTask]) -> dict:
    included, excluded = [], []
    for task in sorted(tasks, key=lambda t: (t.owner, t.detail.get("store", ""))):
        if task.status == GovernanceTask.Status.COMPLETED:
            for bundle in task.receipt.get("bundles", []):
                included.append(
                    {
                        "owner": bundle["owner"],
                        "store": bundle["store"],
                        "name": bundle["name"],
                        "format": bundle["format"],
                        "file": _member(bundle),
                        "rows": bundle["rows"],
                        "bytes": bundle["bytes"],
                        "sha256": bundle["sha256"],
                    }
                )
            continue
        reason = "overdue" if task.is_open else task.status  # declined or failed
        excluded.append(
            {
                "owner": task.owner,
                "store": task.detail.get("store") or task.owner,
                "reason": reason,
                "detail": task.failure
                or (f"due {task.due_at.isoformat()}" if reason == "overdue" else ""),
            }
        )
    excluded += _left_out_by_design(order, tasks)
    return {
        "format": "steward-export/1",
        "order": str(order.pk),
        "tenant": str(order.tenant_id),
        "tenant_slug": order.tenant.slug,
        "requested_by": order.requested_by.get_username(),
        "created_at": timezone.now().isoformat(),
        "audit": "included redacted: who acted, object names and changed values replaced",
        "included": included,
        "not_included": excluded,
    }


def _left_out_by_design(order: GovernanceOrder, tasks: list[GovernanceTask]) -> list[dict]:
    """What the export leaves out on purpose, each with its reason: the tenant's stores
    whose owner was not asked (the binding never held the data, its owner's receipt
    says the data is gone -- apps.stores.selectors.binding_erasure_coverage -- or it was
    bound after the export began), then every table of Steward's own not exported
    (apps.core.governed)."""
    asked = {t.detail.get("binding") for t in tasks}
    stores = [
        {
            "owner": c.binding.store.owning_service.name,
            "store": c.binding.store.slug,
            "binding": str(c.binding.pk),
            "reason": BY_DESIGN,
            # Every binding that may hold the data when the export starts is asked: one
            # not asked that may hold data now was bound after it began.
            "detail": c.reason if c.covered else "Bound after the export began: not in it.",
        }
        for c in binding_erasure_coverage(order.tenant_id)
        if str(c.binding.pk) not in asked
    ]
    tables = [
        (label, NOT_EXPORTED.get(c.phase, "not a record the tenant gave Steward"))
        for label, c in governed_tables().items()
        if not c.exported
    ] + [(label, f"kept by Steward: {why}") for label, why in exempt_tables().items()]
    return stores + [
        {"owner": STEWARD_SERVICE, "store": label, "reason": BY_DESIGN, "detail": why}
        for label, why in sorted(tables)
    ]


def export_archive_assemble(*, order_id) -> str:
    """Build the order's archive once no task is awaited, record it and complete the
    order (ExportCompleted, the requester told). Idempotent: a completed order or one
    with an archive is left alone."""
    with system_scope():
        order = GovernanceOrder.objects.filter(pk=order_id).first()
    if order is None or order.kind != GovernanceOrder.Kind.EXPORT:
        raise NotFound("There is no such export order.")
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if not order.in_progress or ExportArtifact.objects.filter(order=order).exists():
            return "nothing to do"
        tasks = list(order.tasks.filter(phase=order.phase))
        if any(t.is_open and t.overdue_at is None for t in tasks):
            return "waiting"
        content = export_manifest(order, tasks)
        key = f"archives/{order.tenant.slug}-export-{order.pk}.zip"
        with archive_store.FileWriter(tenant_id=order.tenant_id, order_id=order.pk, key=key) as out:
            _write_archive(out, order, tasks, content)
        artifact = ExportArtifact.objects.create(
            tenant_id=order.tenant_id,
            order=order,
            path=key,
            size=out.size,
            sha256=out.sha256,
            expires_at=timezone.now() + timedelta(hours=settings.STEWARD_EXPORT_TTL_HOURS),
        )
        archive_store.delete_bundles(order.pk)  # the archive holds them now
        evidence.append(
            order,
            "archive_assembled",
            artifact=str(artifact.pk),
            sha256=artifact.sha256,
            bytes=artifact.size,
            included=len(content["included"]),
            not_included=[(e["owner"], e["reason"]) for e in content["not_included"]],
        )
        services.order_complete(
            order=order,
            artifact={
                "id": str(artifact.pk),
                "sha256": artifact.sha256,
                "bytes": artifact.size,
                "expires_at": artifact.expires_at.isoformat(),
                "download": f"/api/v1/governance/orders/{order.pk}/export/",
            },
        )
    return "assembled"


def _write_archive(out, order: GovernanceOrder, tasks: list[GovernanceTask], content: dict):
    """The ZIP: the manifest, then each completed task's bundles, copied a chunk at a
    time from the export store."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(content, indent=2, sort_keys=True) + "\n")
        for task in tasks:
            if task.status != GovernanceTask.Status.COMPLETED:
                continue
            for bundle in task.receipt.get("bundles", []):
                member = zipfile.ZipInfo(_member(bundle), timezone.now().timetuple()[:6])
                member.compress_type = zipfile.ZIP_DEFLATED
                member.file_size = bundle["bytes"]  # a member past 2 GiB gets ZIP64 sizes
                with archive.open(member, "w") as copy:
                    for piece in archive_store.chunks(
                        tenant_id=order.tenant_id, key=bundle["path"]
                    ):
                        copy.write(piece)


class ArchiveIncomplete(RuntimeError):
    """The archive's chunks went (it expired, or its tenant was deleted) while it was
    being sent: the download breaks off short of its Content-Length."""


def export_archive_stream(artifact: ExportArtifact) -> Iterator[bytes]:
    """The archive's bytes from the export store, a chunk at a time, for any web process
    to serve. Its first chunk is read at once: an archive whose bytes are gone (one
    kept on disk before Steward stored archives in PostgreSQL) is not found, before any
    answer has begun."""
    pieces = archive_store.chunks(tenant_id=artifact.tenant_id, key=artifact.path)
    first = next(pieces, None)
    if first is None:
        raise NotFound("This order's archive is no longer stored.")
    return _whole(artifact, itertools.chain([first], pieces))


def _whole(artifact: ExportArtifact, pieces: Iterator[bytes]) -> Iterator[bytes]:
    sent = 0
    for piece in pieces:
        sent += len(piece)
        yield piece
    if sent != artifact.size:
        raise ArchiveIncomplete(f"archive {artifact.pk}: {sent} of {artifact.size} bytes found")
