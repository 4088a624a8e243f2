"""The containers' health checks (deploy/healthcheck.py) against real processes: web
under gunicorn with production settings, a real Celery beat, PostgreSQL and Redis."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
import redis
import yaml
from django.conf import settings
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from tests.core.deployment import ROOT, healthcheck, production_web
from tests.support import database_url, free_port, wait_for

PROBE_QUEUE = "deployment-probe"  # no worker reads it


def _get(port: int, path: str, headers: dict) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_the_web_check_asks_as_the_proxy_does_and_passes_only_when_ready():
    environ = {"STEWARD_ALLOWED_HOSTS": "steward.example.com,localhost"}
    with production_web(**environ) as port:
        # given production settings, a bare probe is refused (foreign Host) or redirected
        assert _get(port, "/readyz", {}) == 400
        assert _get(port, "/readyz", {"Host": "steward.example.com"}) == 301
        # when the check asks with the allowed host and the proxy's scheme
        answer = healthcheck.check_http("/readyz", environ, f"http://127.0.0.1:{port}")
        # then readiness (database, Redis, migrations) is reported healthy
        assert answer == "/readyz: 200"
    with pytest.raises(healthcheck.Unhealthy, match="/readyz"):
        healthcheck.check_http("/readyz", environ, f"http://127.0.0.1:{port}")


def test_the_probe_takes_a_host_steward_allows():
    assert healthcheck.probe_headers({"STEWARD_ALLOWED_HOSTS": ".example.com,x"}) == {
        "Host": "example.com",
        "X-Forwarded-Proto": "https",
    }
    assert healthcheck.probe_headers({})["Host"] == "localhost"
    assert healthcheck.probe_headers({"STEWARD_ALLOWED_HOSTS": "*"})["Host"] == "localhost"


def _probe_schedule(last_run_at) -> PeriodicTask:
    every_second, _ = IntervalSchedule.objects.get_or_create(
        every=1, period=IntervalSchedule.SECONDS
    )
    return PeriodicTask.objects.create(
        name="deployment probe",
        task="deployment.probe",
        interval=every_second,
        queue=PROBE_QUEUE,
        last_run_at=last_run_at,
    )


@pytest.mark.django_db(transaction=True)
def test_the_beat_check_fails_on_a_stale_schedule_and_passes_once_beat_runs():
    PeriodicTask.objects.exclude(name="deployment probe").update(enabled=False)
    environ = {"DATABASE_URL": database_url()}
    with pytest.raises(healthcheck.Unhealthy, match="last never"):
        healthcheck.check_beat(environ)
    _probe_schedule(timezone.now() - timedelta(minutes=10))
    with pytest.raises(healthcheck.Unhealthy, match="no schedule sent in 300 s"):
        healthcheck.check_beat(environ)

    # when a real beat runs with the database scheduler, as compose starts it
    beat = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "portal", "beat", "-l", "WARNING"]
        + ["--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"]
        + ["--pidfile", ""],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url()},
    )

    def healthy() -> bool:
        try:
            healthcheck.check_beat(environ)
        except healthcheck.Unhealthy:
            return False
        return True

    try:
        # then the schedule it sent is written back, and the check passes
        wait_for(healthy, timeout=60, interval=0.5)
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        redis.Redis.from_url(settings.REDIS_URL).delete(PROBE_QUEUE)


@pytest.mark.django_db
def test_the_reach_check_needs_both_postgresql_and_redis():
    environ = {"DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL}
    assert healthcheck.check_reach(environ) == "reach: PostgreSQL and Redis answer"
    nowhere = {**environ, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    with pytest.raises(healthcheck.Unhealthy, match="redis"):
        healthcheck.check_reach(nowhere)
    no_database = {**environ, "DATABASE_URL": f"postgresql://steward@127.0.0.1:{free_port()}/x"}
    with pytest.raises(healthcheck.Unhealthy, match="database"):
        healthcheck.check_reach(no_database)


def test_the_script_answers_with_its_exit_status(capsys):
    assert healthcheck.main(["nothing"]) == 2
    port = free_port()
    healthcheck.WEB, before = f"http://127.0.0.1:{port}", healthcheck.WEB
    try:
        assert healthcheck.main(["http", "/healthz"]) == 1
    finally:
        healthcheck.WEB = before
    assert "/healthz" in capsys.readouterr().out


@pytest.mark.django_db(transaction=True)
def test_the_consumers_check_passes_while_runners_work_and_fails_once_they_stop(monkeypatch):
    # Seconds, not the shipped 30: other tests' Redis connections from this address go
    # quiet long before that.
    monkeypatch.setattr(healthcheck, "CONSUMERS_IDLE_SECONDS", 2)
    environ = {"DATABASE_URL": database_url(), "REDIS_URL": settings.REDIS_URL}

    def healthy() -> bool:
        try:
            healthcheck.check_consumers(environ)
        except healthcheck.Unhealthy:
            return False
        return True

    wait_for(lambda: not healthy(), timeout=20, interval=0.5)
    # when run_consumers runs, as compose starts it (Steward's own consumer subscribes
    # to every topic, so there is always a runner)
    consumers = subprocess.Popen(  # noqa: S603
        [sys.executable, "manage.py", "run_consumers"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url()},
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for(healthy, timeout=60, interval=0.5)
        assert "runner connection(s) at work" in healthcheck.check_consumers(environ)
    finally:
        consumers.terminate()
        consumers.wait(timeout=30)
    # then, with the process gone, the check fails again
    wait_for(lambda: not healthy(), timeout=20, interval=0.5)
    with pytest.raises(healthcheck.Unhealthy, match="no runner asked Redis in 2 s"):
        healthcheck.check_consumers(environ)


def _compose_check(service: str) -> str:
    """The shell line of a compose CMD-SHELL health check, `$$` unescaped as compose does."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    kind, line = compose["services"][service]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    return line.replace("$$", "$")


@pytest.mark.django_db(transaction=True)
def test_the_worker_check_passes_while_the_worker_runs():
    node = socket.gethostname()  # a worker's default name is celery@ its host name
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "HOSTNAME": node, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    check = _compose_check("worker")
    # A shorter wait for the answer than compose's, or each refusal below costs 10 s.
    assert "--timeout 10" in check
    check = check.replace("--timeout 10", "--timeout 3")

    def answered() -> bool:
        run = subprocess.run(  # noqa: S602, S603 - compose's own line, as its shell runs it
            ["sh", "-c", check], cwd=ROOT, env=env, capture_output=True, timeout=60
        )
        return run.returncode == 0

    assert not answered()
    # when a worker runs as compose starts it (a queue of its own, so it takes no
    # other test's tasks)
    worker = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "-Q", "deployment-probe"]
        + ["--pool", "solo", "-l", "WARNING"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url()},
    )
    try:
        wait_for(answered, timeout=90, interval=1)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert not answered()
