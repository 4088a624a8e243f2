"""Several web replicas, each scraped by Prometheus: a replica's `/metrics?part=process`
counts its own processes' requests only, and Steward's gauges (the same from any
replica, read from the database) come once, from `?part=state`; so a sum across the
targets counts every request and every figure once."""

import http.client

import pytest
from django.test import Client

from tests.support import gunicorn_process, problem


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def _readyz_answers(port: int) -> float:
    """/readyz requests the replica counted, read from its own scrape target (the
    start-up probes ask /healthz, so a late one never counts here)."""
    status, body = _get(port, "/metrics?part=process")
    assert status == 200
    return sum(
        float(line.rpartition(" ")[2])
        for line in body.decode().splitlines()
        if line.startswith("steward_http_request_duration_seconds_count")
        and 'route="readyz"' in line
    )


@pytest.mark.django_db(transaction=True)
def test_each_replica_counts_its_own_requests_and_the_targets_sum_to_every_request(tmp_path):
    # Each replica's workers share a directory of the replica's own, as on its own host.
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    with (
        gunicorn_process(PROMETHEUS_MULTIPROC_DIR=str(first_dir)) as first,
        gunicorn_process(PROMETHEUS_MULTIPROC_DIR=str(second_dir)) as second,
    ):
        before = {first: _readyz_answers(first), second: _readyz_answers(second)}
        for port, requests in ((first, 12), (second, 5)):
            for _ in range(requests):
                assert _get(port, "/readyz")[0] == 200
        counted = {port: _readyz_answers(port) - before[port] for port in (first, second)}
    assert counted == {first: 12, second: 5}


@pytest.mark.django_db
def test_a_replica_s_figures_and_steward_s_gauges_are_separate_targets():
    client = Client()
    client.get("/healthz")
    process = client.get("/metrics", {"part": "process"}).content.decode()
    state = client.get("/metrics", {"part": "state"}).content.decode()
    both = client.get("/metrics").content.decode()
    assert "steward_http_request_duration_seconds_count" in process
    assert "steward_outbox_backlog" not in process
    assert "steward_outbox_backlog" in state
    assert "steward_http_request_duration_seconds" not in state
    assert "steward_outbox_backlog" in both and "steward_http_request_duration_seconds" in both


@pytest.mark.django_db
def test_an_unknown_part_is_refused_with_a_problem():
    problem(Client().get("/metrics", {"part": "everything"}), 400, "invalid")
