"""An export across replicas that share nothing but PostgreSQL and Redis (issue 39): two
web processes and a Celery worker, each with a home, temporary folder and data folder
of its own. The order is requested and approved, and the owners' bundles uploaded, on
web A; the worker does Steward's own part and builds the archive; web B serves it."""

import contextlib
import hashlib
import http.client
import io
import json
import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.test import Client
from django.utils.crypto import get_random_string

from apps.governance.orders.archive_store import CHUNK
from portal.celery import app
from tests.factories import member, service_token
from tests.governance.factories import open_tasks
from tests.support import ROOT, database_url, wait_for, web_process

ORDERS = "/api/v1/governance/orders/"
TASKS = "/api/v1/governance/tasks/"


class Caller:
    """One caller's HTTP requests to one web process: a person's session (and a CSRF
    pair for writes), or a service's bearer token."""

    def __init__(self, port: int, *, user=None, token=None):
        self.port, self.headers = port, {}
        if user is not None:
            browser = Client()
            browser.force_login(user)
            session = browser.cookies[settings.SESSION_COOKIE_NAME].value
            csrf = get_random_string(32)
            self.headers["Cookie"] = (
                f"{settings.SESSION_COOKIE_NAME}={session}; {settings.CSRF_COOKIE_NAME}={csrf}"
            )
            self.headers["X-CSRFToken"] = csrf
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token.secret}"

    def call(self, method: str, path: str, body: bytes = b"", **headers) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers={**self.headers, **headers})
            answer = conn.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            conn.close()

    def post(self, path: str, payload: dict) -> dict:
        status, _, body = self.call(
            "POST", path, json.dumps(payload).encode(), **{"Content-Type": "application/json"}
        )
        assert status in (200, 201), body
        return json.loads(body)

    def get(self, path: str) -> dict:
        status, _, body = self.call("GET", path)
        assert status == 200, body
        return json.loads(body)


@contextlib.contextmanager
def worker_process(**env: str):
    """A Celery worker in a process of its own, as compose runs one."""
    name = f"exports-{uuid.uuid4().hex[:8]}@test"
    worker = subprocess.Popen(  # noqa: S603
        [str(Path(sys.executable).parent / "celery"), "-A", "portal", "worker", "-n", name]
        + ["--pool", "solo", "--queues", "default,periodic", "--loglevel", "WARNING"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url(), **env},
    )
    try:
        wait_for(lambda: bool(app.control.ping(destination=[name], timeout=0.5)), timeout=60)
        yield
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def parquet_bytes() -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"order_id": [1, 2, 3], "customer": ["ada", "bob", "cy"]}), sink)
    return sink.getvalue()


@pytest.mark.django_db(transaction=True)
def test_an_export_built_by_a_worker_is_served_by_another_web_process(bound, tenant_a, tmp_path):
    # given two web processes and a worker, each with nothing on disk but its own
    # empty folders, and an export asked of the three owners of tenant_a's stores
    people = {
        role: member(tenant_a, role="admin", username=role)
        for role in ("requester", "approver", "reader")
    }
    owners = {name: service_token(name=name, scopes=("governance:write",)) for name in bound}
    own_disk = {}
    for name in ("web-a", "web-b", "worker"):
        for folder in ("home", "tmp", "data"):
            (tmp_path / name / folder).mkdir(parents=True)
        own_disk[name] = {
            "HOME": str(tmp_path / name / "home"),
            "TMPDIR": str(tmp_path / name / "tmp"),
            "STEWARD_DATA_DIR": str(tmp_path / name / "data"),
            "STEWARD_LOG_LEVEL": "WARNING",
        }
    # three chunks of the export store and more, lines cut across them, and more than
    # a body read whole may be (DATA_UPLOAD_MAX_MEMORY_SIZE)
    audit = b"".join(b'{"n": %d, "what": "%s"}\n' % (n, b"x" * 60) for n in range(40_000))
    assert len(audit) > max(3 * CHUNK, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    orders = parquet_bytes()
    app.control.purge()
    with (
        web_process(**own_disk["web-a"]) as port_a,
        web_process(**own_disk["web-b"]) as port_b,
        worker_process(**own_disk["worker"]),
    ):
        # when the order is requested and approved on web A
        order = Caller(port_a, user=people["requester"]).post(
            ORDERS, {"kind": "export", "reason": "customer asked"}
        )
        approver = Caller(port_a, user=people["approver"])
        assert approver.post(f"{ORDERS}{order['id']}/approve/", {})["status"] == "running"
        # and the owners answer on web A
        tasks = {t.owner: t.pk for t in open_tasks(order["id"])}
        for owner, body, media_type in (
            ("audit-log", audit, "application/jsonl"),
            ("orders", orders, "application/vnd.apache.parquet"),
        ):
            status, _, answer = Caller(port_a, token=owners[owner]).call(
                "PUT",
                f"{TASKS}{tasks[owner]}/bundle/",
                body,
                **{"Content-Type": media_type, "Content-SHA256": hashlib.sha256(body).hexdigest()},
            )
            assert status == 200, answer
        Caller(port_a, token=owners["search"]).post(
            f"{TASKS}{tasks['search']}/decline/", {"reason": "rebuilt from orders"}
        )
        # then the worker does Steward's part and builds the archive
        reader = Caller(port_b, user=people["reader"])
        wait_for(lambda: reader.get(f"{ORDERS}{order['id']}/")["status"] == "completed", timeout=90)
        artifact = reader.get(f"{ORDERS}{order['id']}/")["artifact"]
        # and web B serves it, whole and as recorded
        status, headers, archive_bytes = reader.call("GET", f"{ORDERS}{order['id']}/export/")
    assert status == 200 and headers["Content-Type"] == "application/zip"
    assert int(headers["Content-Length"]) == len(archive_bytes) == artifact["size"]
    assert hashlib.sha256(archive_bytes).hexdigest() == artifact["sha256"]
    archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    assert archive.testzip() is None
    manifest = json.loads(archive.read("manifest.json"))
    included = {e["owner"]: e for e in manifest["included"] if e["owner"] != "steward"}
    assert archive.read(included["audit-log"]["file"]) == audit
    assert included["audit-log"]["rows"] == 40_000
    assert archive.read(included["orders"]["file"]) == orders
    assert included["orders"]["rows"] == 3
    assert {e["name"] for e in manifest["included"] if e["owner"] == "steward"}
    assert ("search", "declined") in {(e["owner"], e["reason"]) for e in manifest["not_included"]}
    # and none of the processes kept any of it on its own disk
    left = [str(p) for p in tmp_path.rglob("*") if p.is_file()]
    assert left == []
