"""/metrics: Steward's gauges from every app, the request figures, and who may read them."""

import http.client
import socket
import uuid
from pathlib import Path

import pytest
from django.test import Client
from django_celery_beat.models import PeriodicTask

from apps.assets.models import Asset
from apps.core.outbox import emit
from apps.core.scope import tenant_scope
from tests.support import gunicorn_process

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_metrics_show_stewards_state(tenant_a, scrape):
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
def test_metrics_need_the_token_or_an_allowed_network(settings, scrape):
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 403
    settings.STEWARD_METRICS_TOKEN = "metrics-secret"  # noqa: S105 - test value
    assert Client().get("/metrics").status_code == 403  # loopback no longer enough
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    scrape(HTTP_AUTHORIZATION="Bearer metrics-secret")


@pytest.mark.django_db(transaction=True)
def test_request_figures_add_up_across_several_web_processes(tmp_path):
    """Two gunicorn workers count their own requests; one scrape sums them."""

    def get(port, path):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    def ready(port) -> bool:
        try:
            return get(port, "/readyz")[0] == 200
        except OSError:
            return False

    # The start is waited for on /readyz, so no probe the server answers late (after
    # its client gave up, on a loaded machine) adds to the /healthz requests counted.
    with gunicorn_process(ready=ready, PROMETHEUS_MULTIPROC_DIR=str(tmp_path)) as port:

        def healthz_count() -> float:
            return sum(
                float(line.rpartition(" ")[2])
                for line in get(port, "/metrics")[1].decode().splitlines()
                if line.startswith("steward_http_request_duration_seconds_count")
                and 'route="healthz"' in line
            )

        before = healthz_count()
        # A request left half-sent keeps one sync worker busy, so the other answers the
        # next ones: both processes count requests.
        stalled = socket.create_connection(("127.0.0.1", port), timeout=10)
        stalled.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        for _ in range(39):
            assert get(port, "/healthz")[0] == 200
        stalled.sendall(b"\r\n")
        assert stalled.recv(100).startswith(b"HTTP/1.1 200")
        stalled.close()
        assert healthz_count() - before == 40
        assert len(list(tmp_path.glob("histogram_*.db"))) == 2  # both workers counted


def test_production_lists_no_network_for_metrics_unless_an_operator_does():
    """Issue #36 item 13: in production every loopback caller read /metrics without
    the token; behind a reverse proxy on the same host that is every visitor."""
    from tests.console.test_security_headers import production_settings

    assert production_settings("STEWARD_METRICS_ALLOW") == {"STEWARD_METRICS_ALLOW": []}
    listed = production_settings("STEWARD_METRICS_ALLOW", STEWARD_METRICS_ALLOW="10.0.0.0/8")
    assert listed == {"STEWARD_METRICS_ALLOW": ["10.0.0.0/8"]}


@pytest.mark.django_db
def test_with_no_network_listed_loopback_needs_the_token_too(settings, scrape):
    settings.STEWARD_METRICS_ALLOW = []  # production's default
    assert Client().get("/metrics").status_code == 403
    settings.STEWARD_METRICS_TOKEN = "metrics-secret"  # noqa: S105 - test value
    scrape(HTTP_AUTHORIZATION="Bearer metrics-secret")
