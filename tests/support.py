"""Helpers many tests share: a real HTTP server on the loopback interface (for tests of
Steward's HTTP clients), Steward's own web process (`web_process`), polling,
concurrency, and the test database's URL."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.db import connection

from portal.dburl import url_from_settings
from portal.devstack import web_command

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: bytes


@dataclass
class LocalServer:
    """Answers each request with `respond(received) -> (status, body)`, sent `delay` s late."""

    respond: Callable[[Received], tuple[int, dict]] = lambda r: (200, {})
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    # Another address (a bridge's) lets processes in other network namespaces reach it.
    host: str = "127.0.0.1"

    def __post_init__(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("content-length") or 0)
                received = Received(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                outer.received.append(received)
                # The work is done at once; only the answer is late (as in a timeout).
                status, body = outer.respond(received)
                if outer.delay:
                    time.sleep(outer.delay)
                raw = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

    def __enter__(self) -> LocalServer:
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def wait_for(condition: Callable[[], bool], *, timeout: float = 20.0, interval: float = 0.02):
    """Poll `condition` until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def run_concurrently(work: Callable[[], object], count: int) -> tuple[list, list]:
    """Start `work` in `count` threads released together; (results, errors).

    Each thread closes its own database connection, so the test database can be
    dropped at the end of the run.
    """
    barrier = threading.Barrier(count)
    results: list = []
    errors: list = []

    def run():
        try:
            barrier.wait()
            results.append(work())
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, errors


def database_url() -> str:
    """The test database's URL, for the processes a test starts."""
    return url_from_settings(connection.settings_dict)


def problem(response, status, code):
    """Check an API answer is the problem+json `code` with `status`; its body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    return body


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def web_process(**env: str) -> Iterator[int]:
    """`manage.py runserver` as `make run` starts it (a thread per request, its database
    connections pooled, TCP_NODELAY), without the reloader, on the test database with
    `env` over the test's environment. Yields its port once it answers /readyz; stopped
    after."""
    port = free_port()
    command = web_command("127.0.0.1", str(port), reload=False)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    with _serving(command, port, "/readyz", env, **quiet):
        yield port


@contextlib.contextmanager
def gunicorn_process(
    *, workers: int = 2, ready: Callable[[int], bool] | None = None, **env: str
) -> Iterator[int]:
    """gunicorn with `workers` sync processes, as a web replica runs Steward, on the test
    database with `env` over the test's environment. Yields its port once it answers
    /healthz (or once `ready(port)`, for settings under which a plain ask is refused);
    stopped after."""
    port = free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    # Sync workers: one request at a time each, so a stalled one pins its process.
    command = [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers), "--worker-class", "sync"]
    environ = {"STEWARD_LOG_LEVEL": "WARNING", **env}
    with _serving(command, port, "/healthz", environ, ready=ready):
        yield port


@contextlib.contextmanager
def _serving(command: list[str], port: int, probe: str, env: dict, *, ready=None, **popen):
    """The web server `command` on the test database, until it answers `probe` with 200
    (or until `ready(port)`)."""
    server = subprocess.Popen(  # noqa: S603
        command, cwd=ROOT, env={**os.environ, "DATABASE_URL": database_url(), **env}, **popen
    )

    def up():
        if ready is not None:
            return ready(port)
        asking = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            asking.request("GET", probe)
            return asking.getresponse().status == 200
        except OSError:
            return False
        finally:
            asking.close()

    try:
        wait_for(up, timeout=60)
        yield
    finally:
        server.terminate()
        server.wait(timeout=30)
