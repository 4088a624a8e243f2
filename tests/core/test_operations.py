"""What an on-call engineer reads: /metrics, schedule lateness, JSON logs that follow a
request into its tasks, and no secret in any log line."""

import io
import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.test import Client
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from apps.assets.models import Asset
from apps.core.context import request_id
from apps.core.logs import JsonFormatter, mask
from apps.core.models import ScheduledJob
from apps.core.outbox import emit
from apps.core.schedules import schedule_health
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from portal.celery import app
from tests.factories import service_token
from tests.support import wait_for

ROOT = Path(__file__).resolve().parents[2]


def scrape(client=None, **headers) -> dict:
    answer = (client or Client()).get("/metrics", **headers)
    assert answer.status_code == 200, answer.content
    figures = {}
    for line in answer.content.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            figures[name] = float(value)
    return figures


@pytest.mark.django_db
def test_metrics_show_stewards_state(tenant_a):
    import uuid

    with tenant_scope(tenant_a):
        Asset.objects.create(
            tenant=tenant_a, name="w", status="requested", workflow_instance_id=uuid.uuid4()
        )
        Asset.objects.create(tenant=tenant_a, name="draft")
        emit(
            topic="assets.asset",
            event_type="AssetApproved",
            aggregate_type="assets.asset",
            aggregate_id="1",
            payload={},
            tenant=tenant_a,
        )
    figures = scrape()
    assert figures["steward_workflow_assets_waiting"] == 1
    assert figures["steward_outbox_backlog"] == 1
    assert "steward_governance_tasks_overdue" in figures
    assert any(name.startswith("steward_schedule_late{") for name in figures) or not list(
        PeriodicTask.objects.filter(enabled=True)
    )
    # the scrape itself was timed under its route
    assert any(
        name.startswith("steward_http_request_duration_seconds_count{")
        and 'route="metrics"' in name
        for name in scrape()
    )


@pytest.mark.django_db
def test_metrics_need_the_token_or_an_allowed_network(settings):
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 403
    settings.STEWARD_METRICS_TOKEN = "metrics-secret"  # noqa: S105 - test value
    assert Client().get("/metrics").status_code == 403  # loopback no longer enough
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    scrape(HTTP_AUTHORIZATION="Bearer metrics-secret")


@pytest.mark.django_db(transaction=True)
def test_request_figures_add_up_across_several_web_processes(tmp_path):
    """Two gunicorn workers count their own requests; one scrape sums them."""
    import http.client
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "STEWARD_LOG_LEVEL": "WARNING"}
    from django.db import connection

    env["DATABASE_URL"] = _database_url(connection)
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    proc = subprocess.Popen(  # noqa: S603
        # Sync workers: one request at a time each, so a stalled one pins its process.
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}"]
        + ["--workers", "2", "--worker-class", "sync"],
        cwd=ROOT,
        env=env,
    )

    def get(path):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()

    try:

        def up():
            try:
                return get("/healthz")[0] == 200
            except OSError:
                return False

        wait_for(up, timeout=60)

        def healthz_count() -> float:
            return sum(
                float(line.rpartition(" ")[2])
                for line in get("/metrics")[1].decode().splitlines()
                if line.startswith("steward_http_request_duration_seconds_count")
                and 'route="healthz"' in line
            )

        # Counted from here: the probes that waited for the start may have been
        # answered late, after their client gave up, and still count.
        before = healthz_count()
        # A request left half-sent keeps one sync worker busy, so the other answers the
        # next ones: both processes count requests.
        stalled = socket.create_connection(("127.0.0.1", port), timeout=10)
        stalled.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        for _ in range(39):
            assert get("/healthz")[0] == 200
        stalled.sendall(b"\r\n")
        assert stalled.recv(100).startswith(b"HTTP/1.1 200")
        stalled.close()
        assert healthz_count() - before == 40
        assert len(list(tmp_path.glob("histogram_*.db"))) == 2  # both workers counted
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _database_url(connection) -> str:
    params = connection.get_connection_params()
    host = params.get("host", "")
    return f"postgresql://{params['user']}@/{params['dbname']}?host={host}"


@pytest.mark.django_db
def test_a_job_that_has_not_succeeded_within_twice_its_interval_is_late(client, operator):
    every_minute = IntervalSchedule.objects.get_or_create(every=1, period="minutes")[0]
    PeriodicTask.objects.create(name="tests.job", task="tests.periodic_job", interval=every_minute)
    ScheduledJob.objects.create(
        name="tests.periodic_job", last_succeeded_at=timezone.now() - timedelta(seconds=90)
    )
    [job] = [j for j in schedule_health() if j.name == "tests.periodic_job"]
    assert not job.late
    ScheduledJob.objects.filter(name="tests.periodic_job").update(
        last_succeeded_at=timezone.now() - timedelta(minutes=4), last_error="ValueError: boom"
    )
    [job] = [j for j in schedule_health() if j.name == "tests.periodic_job"]
    assert job.late
    ready = client.get("/readyz").json()
    assert {j["job"] for j in ready["late_schedules"]} >= {"tests.periodic_job"}
    assert scrape()['steward_schedule_late{job="tests.periodic_job"}'] == 1
    client.force_login(operator)
    page = client.get("/").content.decode()
    assert "tests.periodic_job" in page and "ValueError: boom" in page


@app.task(scope="system", name="tests.periodic_report")
def periodic_report():
    logging.getLogger("tests.report").info("reporting")
    emit(
        topic="tenancy.tenant",
        event_type="tenant.updated",
        aggregate_type="tenancy.tenant",
        aggregate_id="x",
        payload={},
    )


@pytest.mark.django_db(transaction=True)
def test_the_request_id_follows_into_the_task_its_log_lines_and_its_events():
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.report")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO  # whatever the root's level is
    app.control.purge()  # nothing left over from another test's queue
    try:
        with start_worker(
            app,
            pool="solo",
            perform_ping_check=False,
            queues=["default", "periodic"],
            shutdown_timeout=30,
        ):
            token = request_id.set("req-abc123")
            try:
                periodic_report.delay()
            finally:
                request_id.reset(token)
            wait_for(
                lambda: ScheduledJob.objects.filter(
                    name="tests.periodic_report", last_succeeded_at__isnull=False
                ).exists(),
                timeout=30,
            )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [line] = [json.loads(x) for x in lines.getvalue().splitlines()]
    assert line["request_id"] == "req-abc123" and line["task"] == "tests.periodic_report"
    with system_scope():
        assert OutboxEvent.objects.get(event_type="tenant.updated").correlation_id == "req-abc123"
    # a periodic task's run is recorded under its name, for schedule monitoring
    job = ScheduledJob.objects.get(name="tests.periodic_report")
    assert job.last_succeeded_at is not None and job.last_duration_ms is not None


SECRETS = {
    "token": "stw_0a1b2c3d_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
    "bearer": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
    "url": "redis://:hunter2hunter2@cache:6379/0",
    "pair": "password=correct-horse-battery",
    "json": '{"secret": "s3cr3t-value"}',
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secrets_are_masked_in_any_log_line(name):
    text = SECRETS[name]
    masked = mask(f"calling with {text} now")
    for fragment in ("Zm9vYmFy", "abcdefghijklmnop", "hunter2", "correct-horse", "s3cr3t"):
        assert fragment not in masked
    assert "[redacted]" in masked


@pytest.mark.django_db
def test_no_token_or_password_reaches_the_logs_of_a_busy_request_path(caplog, api, operator):
    """Issue a token, call with it and with a bad one, sign in with a wrong password: the
    log lines written meanwhile, as formatted, contain neither."""
    caplog.set_level(logging.DEBUG)
    issued = service_token(name="noisy")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    api.get("/api/v1/whoami/")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}x")
    api.get("/api/v1/whoami/")
    Client().post("/login/", {"username": "op", "password": "wrong horse battery"})
    formatter = JsonFormatter()
    output = "\n".join(formatter.format(record) for record in caplog.records)
    assert caplog.records  # the path did log (SQL at DEBUG, the refusals)
    assert issued.secret not in output and issued.secret.split("_")[-1] not in output
    assert "wrong horse battery" not in output


@pytest.mark.django_db
def test_a_consumer_handles_an_event_under_its_correlation_id(tenant_a):
    from apps.eventing.consumers import Handler, handle_envelopes
    from apps.eventing.envelope import Envelope

    seen = []
    with tenant_scope(tenant_a):
        envelope = emit(
            topic="tenancy.tenant",
            event_type="tenant.updated",
            aggregate_type="tenancy.tenant",
            aggregate_id=str(tenant_a.pk),
            payload={},
            tenant=tenant_a,
            correlation_id="corr-42",
        )
    handler = Handler(
        consumer="tests.correlation", topics=None, func=lambda e: seen.append(request_id.get())
    )
    assert handle_envelopes(handler, [Envelope.from_dict(envelope.to_dict())]) == 1
    assert seen == ["corr-42"] and request_id.get() == ""
