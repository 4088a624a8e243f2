"""Orders and tasks through the API; an export archive checked byte by byte."""

import hashlib
import io
import json
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import ExportChunk, GovernanceOrder, GovernanceTask
from apps.governance.orders import evidence, exports
from apps.governance.steward_owner import services as steward_owner
from apps.registry.models import Service
from apps.stores.models import Store, StoreBinding
from apps.tenancy.models import AuditEvent
from tests.factories import member, service_token
from tests.governance.factories import (
    approved,
    fresh,
    open_tasks,
    running_exports,
    stored_archive,
)
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db

ORDERS = "/api/v1/governance/orders/"
TASKS = "/api/v1/governance/tasks/"


def signed_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def as_owner(name) -> APIClient:
    issued = service_token(name=name, scopes=("governance:write",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return client


TYPES = {"jsonl": "application/jsonl", "parquet": "application/vnd.apache.parquet"}


def put_bundle(client, task_id, body: bytes, fmt: str, sha256=None):
    return client.generic(
        "PUT",
        f"{TASKS}{task_id}/bundle/",
        body,
        content_type=TYPES.get(fmt, "text/csv"),
        HTTP_CONTENT_SHA256=sha256 or hashlib.sha256(body).hexdigest(),
    )


@pytest.fixture
def export_order(bound, tenant_a):
    """An approved export of tenant_a, requested and approved through the API."""
    requester = member(tenant_a, role="admin", username="req", email="req@example.com")
    approver = member(tenant_a, role="admin", username="appr")
    answer = signed_in(requester).post(
        ORDERS, {"kind": "export", "reason": "customer asked"}, format="json"
    )
    assert answer.status_code == 201, answer.json()
    order_id = answer.json()["id"]
    own = signed_in(requester).post(f"{ORDERS}{order_id}/approve/", {}, format="json")
    assert own.status_code == 409 and own.json()["code"] == "requester_cannot_decide"
    answer = signed_in(approver).post(f"{ORDERS}{order_id}/approve/", {}, format="json")
    assert answer.status_code == 200
    assert answer.json()["status"] == "running"  # an export starts at once
    return answer.json()


def parquet_bytes() -> bytes:
    table = pa.table({"order_id": [1, 2, 3], "customer": ["ada", "bob", "cy"]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_an_export_archive_holds_every_bundle_byte_for_byte_with_a_manifest(
    export_order, tenant_a, bound, region
):
    # a fourth owner that will decline
    crm = Store.objects.create(
        slug="crm-sql",
        name="CRM",
        owning_service=Service.objects.get_or_create(name="crm")[0],
        data_class=bound["orders"].data_class,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )
    with tenant_scope(tenant_a):
        StoreBinding.objects.create(
            tenant=tenant_a,
            store=crm,
            profile=StoreBinding.objects.first().profile,
            region=region,
            status=StoreBinding.Status.ACTIVE,
        )
    # the crm binding came after the start: only the owners bound then were asked
    tasks = {t.owner: t for t in open_tasks(export_order["id"])}
    assert set(tasks) == {"audit-log", "orders", "search", "steward"}
    assert {t.kind for t in tasks.values()} == {"export"}
    answer = as_owner("search").post(
        f"{TASKS}{tasks['search'].pk}/decline/", {"reason": "rebuilt from orders"}, format="json"
    )
    assert answer.status_code == 200

    orders_bytes = parquet_bytes()
    audit_bytes = b'{"at": "2026-01-01", "who": "[redacted]"}\n{"at": "2026-01-02"}\n'
    orders = as_owner("orders")
    answer = put_bundle(orders, tasks["orders"].pk, orders_bytes, "parquet")
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "completed"
    assert answer.json()["receipt"]["bundles"][0]["rows"] == 3
    assert (
        put_bundle(as_owner("audit-log"), tasks["audit-log"].pk, audit_bytes, "jsonl").status_code
        == 200
    )
    with tenant_scope(tenant_a):
        audit_ids = set(AuditEvent.objects.filter(tenant=tenant_a).values_list("id", flat=True))
    assert steward_owner.owner_task_run(task_id=tasks["steward"].pk) == "completed"
    assert exports.export_archive_assemble(order_id=export_order["id"]) == "assembled"
    assert exports.export_archive_assemble(order_id=export_order["id"]) == "nothing to do"

    order = signed_in(member(tenant_a, role="admin", username="reader")).get(
        f"{ORDERS}{export_order['id']}/"
    )
    body = order.json()
    assert body["status"] == "completed" and body["artifact"]["available"]
    download = signed_in(member(tenant_a, role="admin", username="dl")).get(
        f"{ORDERS}{export_order['id']}/export/"
    )
    assert download.status_code == 200
    archive_bytes = b"".join(download.streaming_content)
    assert hashlib.sha256(archive_bytes).hexdigest() == body["artifact"]["sha256"]
    archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    manifest = json.loads(archive.read("manifest.json"))
    included = {(e["owner"], e["name"]): e for e in manifest["included"]}
    # the owners' bundles, byte for byte, and what the manifest says of them
    parquet = included[("orders", "orders-sql")]
    assert archive.read(parquet["file"]) == orders_bytes
    assert parquet == {
        "owner": "orders",
        "store": "orders-sql",
        "name": "orders-sql",
        "format": "parquet",
        "file": "bundles/orders/orders-sql.parquet",
        "rows": 3,
        "bytes": len(orders_bytes),
        "sha256": hashlib.sha256(orders_bytes).hexdigest(),
    }
    assert archive.read(included[("audit-log", "audit-archive")]["file"]) == audit_bytes
    read_back = pq.read_table(io.BytesIO(archive.read(parquet["file"])))
    assert read_back.column("customer").to_pylist() == ["ada", "bob", "cy"]
    # every member's checksum and size holds
    for entry in manifest["included"]:
        data = archive.read(entry["file"])
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (entry["sha256"], entry["bytes"])
    assert sorted(archive.namelist()) == sorted(
        ["manifest.json", *(e["file"] for e in manifest["included"])]
    )
    # Steward's own tables, as JSON Lines that read back, the audit trail redacted
    audit_file = included[("steward", "tenancy.AuditEvent")]["file"]
    rows = [json.loads(line) for line in archive.read(audit_file).splitlines()]
    assert {r["id"] for r in rows} == audit_ids
    assert rows and {r["actor_label"] for r in rows} == {"[redacted]"}
    # what was not included: the owner that declined, and the crm binding that came
    # after the start and Steward's tables not exported, by design
    not_included = [e for e in manifest["not_included"] if e["owner"] != "steward"]
    assert [(e["owner"], e["store"], e["reason"]) for e in not_included] == [
        ("search", "search-index", "declined"),
        ("crm", "crm-sql", "by_design"),
    ]
    assert {e["reason"] for e in manifest["not_included"] if e["owner"] == "steward"} == {
        "by_design"
    }
    # the evidence verifies and names the archive
    with system_scope():
        document = evidence.document(fresh_order(export_order["id"]))
    assert evidence.verify(document) == (True, None)
    assert any(e["kind"] == "archive_assembled" for e in document["entries"])


def fresh_order(order_id):
    with system_scope():
        return GovernanceOrder.objects.get(pk=order_id)


def test_owners_not_included_are_listed_with_the_reason(export_order, tenant_a):
    tasks = {t.owner: t for t in open_tasks(export_order["id"])}
    answer = as_owner("orders").post(
        f"{TASKS}{tasks['orders'].pk}/decline/", {"reason": "no personal data here"}, format="json"
    )
    assert answer.status_code == 200
    answer = as_owner("audit-log").post(
        f"{TASKS}{tasks['audit-log'].pk}/fail/", {"reason": "archive offline"}, format="json"
    )
    assert answer.status_code == 200
    answer = as_owner("search").post(
        f"{TASKS}{tasks['search'].pk}/decline/", {"reason": "rebuilt from orders"}, format="json"
    )
    assert answer.status_code == 200
    steward_owner.owner_task_run(task_id=tasks["steward"].pk)
    assert exports.export_archive_assemble(order_id=export_order["id"]) == "assembled"
    order = fresh_order(export_order["id"])
    manifest = json.loads(stored_archive(order).read("manifest.json"))
    # what was left out by design follows (apps/governance/orders/test_export_coverage.py)
    assert [e for e in manifest["not_included"] if e["reason"] != "by_design"] == [
        {
            "owner": "audit-log",
            "store": "audit-archive",
            "reason": "failed",
            "detail": "archive offline",
        },
        {
            "owner": "orders",
            "store": "orders-sql",
            "reason": "declined",
            "detail": "no personal data here",
        },
        {
            "owner": "search",
            "store": "search-index",
            "reason": "declined",
            "detail": "rebuilt from orders",
        },
    ]


def test_bad_bundles_are_refused_and_leave_nothing(export_order, settings, tmp_path):
    tasks = {t.owner: t for t in open_tasks(export_order["id"])}
    orders = as_owner("orders")
    task = tasks["orders"].pk
    body = b'{"a": 1}\n'
    cases = [
        (put_bundle(orders, task, body, "jsonl", sha256="0" * 64), 400, "checksum_mismatch"),
        (put_bundle(orders, task, body, "jsonl", sha256="nope"), 400, "checksum_required"),
        (put_bundle(orders, task, b"not json\n", "jsonl"), 400, "bundle_unreadable"),
        (put_bundle(orders, task, b"PAR1 broken", "parquet"), 400, "bundle_unreadable"),
        (put_bundle(orders, task, body, "csv"), 400, "unsupported_bundle_type"),
        # another owner's task is answered as a missing one (issue #19, enumeration)
        (put_bundle(as_owner("audit-log"), task, body, "jsonl"), 404, "not_found"),
    ]
    settings.STEWARD_EXPORT_BUNDLE_MAX_BYTES = 4
    cases.append((put_bundle(orders, task, body, "jsonl"), 413, "bundle_too_large"))
    for answer, status, code in cases:
        assert (answer.status_code, answer.json()["code"]) == (status, code), answer.json()
    fresh(tasks["orders"])
    assert tasks["orders"].status == "issued"
    with system_scope():
        assert not ExportChunk.objects.exists()


def test_owners_see_and_answer_only_their_own_tasks(bound, tenant_a, operator, settings):

    settings.STEWARD_DELETION_GRACE_HOURS = 0
    order = approved(tenant_a)
    search = as_owner("search")
    listed = search.get(TASKS).json()["results"]
    assert [t["owner"] for t in listed] == ["search"]
    task = listed[0]["id"]
    assert search.post(f"{TASKS}{task}/acknowledge/").json()["status"] == "acknowledged"
    bad = search.post(f"{TASKS}{task}/complete/", {"items": [], "digest": "x"}, format="json")
    assert bad.status_code == 400
    steward_task = next(t for t in open_tasks(order) if t.owner == "steward")
    other = search.post(f"{TASKS}{steward_task.pk}/acknowledge/")
    assert other.status_code == 404  # another owner's task is not even visible
    good = search.post(
        f"{TASKS}{task}/complete/",
        {"items": [{"what": "index", "action": "deleted", "count": 12}], "digest": "c" * 64},
        format="json",
    )
    assert good.status_code == 200 and good.json()["receipt"]["items"][0]["count"] == 12
    with system_scope():
        assert GovernanceTask.objects.get(pk=task).status == "completed"
    # the evidence document downloads and verifies through the API
    ops = signed_in(operator)
    document = ops.get(f"{ORDERS}{order.pk}/evidence/").json()
    assert ops.post("/api/v1/governance/evidence/verify/", document, format="json").json()["valid"]
    document["entries"][1]["data"]["by"] = "someone else"
    verdict = ops.post("/api/v1/governance/evidence/verify/", document, format="json").json()
    assert (verdict["valid"], verdict["first_bad_entry"]) == (False, 2)


@pytest.mark.parametrize("url", [ORDERS, TASKS])
def test_the_order_and_task_lists_query_count_does_not_grow(tenant_a, operator, url):
    requester = member(tenant_a, role="admin", username="requester")
    approver = member(tenant_a, role="admin", username="approver")
    ops = signed_in(operator)
    assert_flat_query_count(
        lambda n: running_exports(tenant_a, requester, approver, n), lambda: ops.get(url)
    )


@pytest.mark.django_db
def test_a_read_only_token_may_verify_evidence(tenant_a, operator):
    # Issue #19: verifying changes nothing, so a read scope may call it.
    order = approved(tenant_a)
    document = signed_in(operator).get(f"{ORDERS}{order.pk}/evidence/").json()
    reader = APIClient()
    reader.credentials(
        HTTP_AUTHORIZATION=f"Bearer {service_token(scopes=['governance:read']).secret}"
    )
    answer = reader.post("/api/v1/governance/evidence/verify/", document, format="json")
    assert answer.status_code == 200 and answer.json()["valid"] is True


@pytest.mark.django_db
def test_another_owners_bundle_upload_is_told_what_a_missing_task_is_told(export_order):
    # Issue #19: 403 for another owner's task but 404 for a missing one told the caller
    # which tasks exist.
    task = next(t for t in open_tasks(export_order["id"]) if t.owner == "orders")
    intruder = as_owner("search")
    body = b'{"a": 1}\n'
    theirs = put_bundle(intruder, task.pk, body, "jsonl")
    missing = put_bundle(intruder, "00000000-0000-0000-0000-000000000000", body, "jsonl")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    assert fresh(task).status == task.status


@pytest.mark.django_db
def test_a_tenant_admin_cannot_tell_another_tenants_slug_from_an_unknown_one(tenant_a, tenant_b):
    # Issue #19: tenant_mismatch for another tenant's slug, does_not_exist for a slug
    # nobody has, let a tenant's people list the other tenants.
    admin = signed_in(member(tenant_a, role="admin"))
    body = {"kind": "export", "reason": "asked"}
    other = admin.post(ORDERS, {**body, "tenant": tenant_b.slug}, format="json")
    unknown = admin.post(ORDERS, {**body, "tenant": "no-such-tenant"}, format="json")
    assert other.status_code == unknown.status_code == 400
    assert other.json() == unknown.json()
    assert other.json()["code"] == "tenant_mismatch"
    with system_scope():
        assert not GovernanceOrder.objects.exists()


HOLDS = "/api/v1/governance/retention/holds/"


def _set_status(tenant, status):
    from apps.core.context import SYSTEM_ACTOR
    from apps.tenancy import services as tenancy

    tenancy.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant, status=status)


def _governance_rows(tenant):
    from apps.governance.models import LegalHold

    with system_scope():
        return (
            GovernanceOrder.objects.filter(tenant=tenant).count(),
            LegalHold.objects.filter(tenant=tenant).count(),
        )


@pytest.mark.parametrize(
    "status, code", [("suspended", "tenant_suspended"), ("offboarding", "tenant_offboarding")]
)
def test_a_suspended_or_offboarding_tenant_s_admin_starts_no_order_or_hold(tenant_a, status, code):
    """Issue #36 item 12: all of /api/v1/governance/ was exempt from the status check,
    so such a tenant's admins still requested orders and placed holds (201)."""
    admin = signed_in(member(tenant_a, role="admin", username="gov-admin"))
    _set_status(tenant_a, status)
    order = admin.post(ORDERS, {"kind": "export", "reason": "asked"}, format="json")
    hold = admin.post(HOLDS, {"reason": "litigation"}, format="json")
    for answer in (order, hold):
        assert answer.status_code == 403 and answer.json()["code"] == code, answer.content
    assert _governance_rows(tenant_a) == (0, 0)
    assert admin.get(ORDERS).status_code == 200  # they still read


def test_an_operator_acts_for_a_suspended_tenant_and_only_for_the_deletion_of_an_offboarding_one(
    tenant_a, operator
):
    staff = signed_in(operator)
    body = {"tenant": tenant_a.slug}
    _set_status(tenant_a, "suspended")
    # a suspended tenant is usually on its way to deletion, or owed an export
    assert (
        staff.post(ORDERS, {**body, "kind": "export", "reason": "owed"}, format="json").status_code
        == 201
    )
    assert staff.post(HOLDS, {**body, "reason": "litigation"}, format="json").status_code == 201
    _set_status(tenant_a, "offboarding")
    # the deletion in progress may still need a hold (it pauses the purges it covers)...
    assert staff.post(HOLDS, {**body, "reason": "subpoena"}, format="json").status_code == 201
    # ...but no new order runs against data being deleted
    order = staff.post(ORDERS, {**body, "kind": "export", "reason": "late"}, format="json")
    assert order.status_code == 403 and order.json()["code"] == "tenant_offboarding"
    assert _governance_rows(tenant_a) == (1, 2)


def test_an_offboarding_tenant_s_evidence_may_still_be_checked(tenant_a, operator):
    order = approved(tenant_a)
    document = signed_in(operator).get(f"{ORDERS}{order.pk}/evidence/").json()
    admin = signed_in(member(tenant_a, role="admin", username="gov-admin"))
    _set_status(tenant_a, "offboarding")
    answer = admin.post("/api/v1/governance/evidence/verify/", document, format="json")
    assert answer.status_code == 200 and answer.json()["valid"] is True


def test_a_bundle_is_bounded_by_its_own_limit_not_the_body_limit(export_order, settings):
    """A bundle streams into the export store; the limit on bodies read whole into
    memory (DATA_UPLOAD_MAX_MEMORY_SIZE) is not its limit, and still holds elsewhere."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    tasks = {t.owner: t for t in open_tasks(export_order["id"])}
    body = b"".join(b'{"n": %d}\n' % n for n in range(1000))
    assert len(body) > 1000
    answer = put_bundle(as_owner("orders"), tasks["orders"].pk, body, "jsonl")
    assert answer.status_code == 200, answer.content
    assert answer.json()["receipt"]["bundles"][0]["rows"] == 1000
    refused = as_owner("search").post(
        f"{TASKS}{tasks['search'].pk}/decline/", {"reason": "x" * 2000}, format="json"
    )
    assert (refused.status_code, refused.json()["code"]) == (413, "body_too_large")
