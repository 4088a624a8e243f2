"""A foreign Host and an over-long URL are answered by Steward in the caller's shape:
problem+json on API paths, Steward's own page on console paths (issue #36 item 13:
both were the server's HTML 400 and 414)."""

import contextlib
import http.client
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from tests.support import database_url, problem, wait_for

ROOT = Path(__file__).resolve().parents[2]
LONG_QUERY = "q=" + "a" * 5000  # over STEWARD_MAX_URL_LENGTH, under gunicorn's limit


@pytest.mark.django_db
def test_a_foreign_host_gets_a_problem_on_the_api_and_stewards_page_on_the_console():
    foreign = Client(HTTP_HOST="attacker.example")
    body = problem(foreign.get("/api/v1/whoami/"), 400, "bad_host")
    assert "attacker.example" not in str(body)
    page = foreign.get("/")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")
    assert "Unknown host" in page.content.decode() and "Steward" in page.content.decode()


@pytest.mark.django_db
def test_an_over_long_url_is_refused_with_414_in_the_caller_s_shape(settings):
    problem(Client().get(f"/api/v1/whoami/?{LONG_QUERY}"), 414, "url_too_long")
    page = Client().get(f"/?{LONG_QUERY}")
    assert page.status_code == 414 and "URL too long" in page.content.decode()
    # under the limit, the request is served as ever
    assert Client().get("/api/v1/whoami/?q=short").status_code == 401


def _answer(port, path, host="localhost"):
    """(status, content type, body) of a GET sent with `host` as its Host header."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("GET", path, skip_host=True)
    conn.putheader("Host", host)
    conn.endheaders()
    answer = conn.getresponse()
    return answer.status, answer.getheader("Content-Type"), answer.read()


def _serving(port) -> bool:
    with contextlib.suppress(OSError):
        return _answer(port, "/healthz")[0] == 200
    return False


@pytest.mark.django_db(transaction=True)
def test_under_gunicorn_steward_not_the_server_answers_both():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "STEWARD_LOG_LEVEL": "ERROR", "DATABASE_URL": database_url()}
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    # gunicorn.conf.py in the working directory is read, as in the image.
    proc = subprocess.Popen(  # noqa: S603
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
    )
    try:
        wait_for(lambda: _serving(port), timeout=60)
        status, kind, _ = _answer(port, f"/api/v1/whoami/?{LONG_QUERY}")
        assert (status, kind) == (414, "application/problem+json")
        status, kind, body = _answer(port, "/api/v1/whoami/", host="attacker.example")
        assert (status, kind) == (400, "application/problem+json")
        assert b'"bad_host"' in body
    finally:
        proc.terminate()
        proc.wait(timeout=30)
