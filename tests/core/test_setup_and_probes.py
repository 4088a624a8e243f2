"""Set-up installs things once, even when two processes run it together; the probes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from apps.core import setup
from apps.tenancy.models import ApiToken, DataClass, Region, Tenant, User
from portal.dburl import url_from_settings

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database's URL, for the processes a test starts."""
    return url_from_settings(connection.settings_dict)


@pytest.mark.django_db(transaction=True)
def test_two_setups_at_the_same_moment_create_nothing_twice():
    env = {**os.environ, "DATABASE_URL": database_url()}
    command = [sys.executable, "manage.py", "steward_setup", "--demo"]
    procs = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120)[0].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    # exactly one of them loaded the demo data and printed its token
    assert sum("shown once" in out for out in outputs) == 1
    assert Region.objects.count() == len(setup.REGIONS)
    assert DataClass.objects.count() == len(setup.DATA_CLASSES)
    schedules = setup.SCHEDULES + setup.OPT_IN_SCHEDULES
    assert IntervalSchedule.objects.count() == len({(s[1], s[2]) for s in schedules})
    assert PeriodicTask.objects.filter(name__in=[s[0] for s in schedules]).count() == len(schedules)
    # opt-in jobs are installed switched off
    assert not PeriodicTask.objects.get(name="assets.periodic_reconcile_workflows").enabled
    assert User.objects.filter(username="operator").count() == 1
    assert Tenant.objects.filter(slug__in=["acme", "globex"]).count() == 2
    assert ApiToken.objects.count() == 1


def test_healthz_answers_without_authentication(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_checks_database_redis_and_migrations(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "migrations": "ok"}


@pytest.mark.django_db
def test_readyz_reports_unavailable_when_redis_is_gone(client, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"].startswith("error")
    assert response.json()["checks"]["database"] == "ok"


def run_devstack(env_overrides):
    env = {**os.environ, **env_overrides}
    return subprocess.run(
        [sys.executable, "-m", "portal.devstack", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_database_url_that_points_nowhere_stops_with_one_clear_sentence():
    result = run_devstack({"DATABASE_URL": "postgresql://steward@127.0.0.1:1/steward"})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("steward: Steward cannot reach the PostgreSQL server at 127.0.0.1:1")


def test_a_redis_url_that_points_nowhere_stops_with_one_clear_sentence():
    result = run_devstack({"REDIS_URL": "redis://127.0.0.1:1/0"})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "cannot reach the Redis server at 127.0.0.1" in result.stderr
