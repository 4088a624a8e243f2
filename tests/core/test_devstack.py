"""`make run`'s stack, for real: four processes that carry an event from a console write to
a consumer, and Ctrl-C stops them all."""

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

from apps.tenancy import totp
from tests.support import database_url, wait_for

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def scratch_database(db):
    """An empty database of its own, so the stack's migrate and demo data touch nothing else."""
    name = f"steward_run_{uuid.uuid4().hex[:8]}"
    admin = database_url()
    with psycopg.connect(
        admin.replace(f"/{connection.settings_dict['NAME']}", "/postgres"), autocommit=True
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.replace(f"/{connection.settings_dict['NAME']}", f"/{name}")
    with psycopg.connect(
        admin.replace(f"/{connection.settings_dict['NAME']}", "/postgres"), autocommit=True
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_make_run_serves_carries_events_and_stops_on_ctrl_c(scratch_database):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": scratch_database, "STEWARD_PORT": str(port)}
    stack = subprocess.Popen(
        [sys.executable, "-m", "portal.devstack", "run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def ready():
            try:
                return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(ready, timeout=120, interval=0.5)
        children = subprocess.run(
            [
                "pgrep",
                "-s",
                str(os.getpgid(stack.pid)),
                "-f",
                "devstack runserver|celery|run_consumers",
            ],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert len(children) >= 4  # web (with its reloader), worker, beat, consumers

        # A console write: an operator creates a tenant; its event reaches the consumer.
        with httpx.Client(base_url=base, timeout=10) as browser:
            browser.get("/login/")
            token = browser.cookies["csrftoken"]
            browser.post(
                "/login/",
                data={
                    "username": "operator",
                    "password": "steward-demo",
                    "csrfmiddlewaretoken": token,
                },
                headers={"Referer": f"{base}/login/"},
            )
            # The demo operator has no authenticator yet: operators enrol one first.
            token = browser.cookies["csrftoken"]  # signing in rotates it
            browser.post(
                "/account/two-factor/start/",
                data={"csrfmiddlewaretoken": token},
                headers={"Referer": f"{base}/account/two-factor/"},
            )
            page = browser.get("/account/two-factor/").text
            seed = re.search(r'<code id="totp-secret">([A-Z2-7]+)</code>', page).group(1)
            code = totp.totp(base64.b32decode(seed + "=" * (-len(seed) % 8)), time.time())
            confirmed = browser.post(
                "/account/two-factor/confirm/",
                data={"code": code, "csrfmiddlewaretoken": token},
                headers={"Referer": f"{base}/account/two-factor/"},
            )
            assert "Recovery codes" in confirmed.text
            slug = f"run-{uuid.uuid4().hex[:6]}"
            created = browser.post(
                "/tenants/new/",
                data={
                    "slug": slug,
                    "name": "Run",
                    "home_region": "westeurope",
                    "environment_class": "non_production",
                    "csrfmiddlewaretoken": token,
                },
                headers={"Referer": f"{base}/tenants/new/"},
            )
            tenant_id = created.headers["location"].strip("/").split("/")[-1]

            def handled():
                page = browser.get("/eventing/recent/", params={"aggregate_id": tenant_id})
                return "tenant.created" in page.text

            wait_for(handled, timeout=60, interval=0.5)
    finally:
        session = os.getpgid(stack.pid)
        os.killpg(session, signal.SIGINT)  # what Ctrl-C in a terminal does
        stack.communicate(timeout=60)

    def leftovers():
        found = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True)
        return found.stdout.split()

    # The stack has exited; a worker's pool children may take a moment more to go.
    try:
        wait_for(lambda: leftovers() == [], timeout=15, interval=0.2)
    except AssertionError:
        listing = subprocess.run(
            ["ps", "-o", "pid,args", "-p", ",".join(leftovers())], capture_output=True, text=True
        )
        raise AssertionError(f"processes outlived Ctrl-C:\n{listing.stdout}") from None


def test_the_browser_journeys_name_the_chromium_they_drive(monkeypatch, tmp_path):
    from portal import devstack

    binary = tmp_path / "chromium"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("STEWARD_CHROMIUM", str(binary))
    env: dict = {}
    devstack.ensure_browser(env)
    assert env["STEWARD_CHROMIUM"] == str(binary)


@pytest.mark.parametrize("named", [None, "/nonexistent/chromium"])
def test_without_chromium_the_test_run_stops_with_one_line_saying_what_to_install(
    monkeypatch, tmp_path, named
):
    from portal import devstack

    if named:
        monkeypatch.setenv("STEWARD_CHROMIUM", named)
    else:
        monkeypatch.delenv("STEWARD_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium and no apt-get to be found
    with pytest.raises(devstack.StackError) as refused:
        devstack.ensure_browser({})
    message = str(refused.value)
    assert "\n" not in message
    assert "apt-get install chromium" in message and "STEWARD_CHROMIUM" in message


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
