"""What the deployment tests share: the shipped health checks as a module, and Steward
as the image runs it (gunicorn, production settings) on the test database."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support import database_url, free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]


def load_healthcheck():
    """deploy/healthcheck.py, which the image runs as a script, not as a package module."""
    spec = importlib.util.spec_from_file_location("healthcheck", ROOT / "deploy" / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


healthcheck = load_healthcheck()


@contextlib.contextmanager
def production_web(**env: str) -> Iterator[int]:
    """gunicorn as docker-compose's web runs it, STEWARD_ENV=production (Secure __Host-
    cookies, the HTTPS redirect), on the test database. Yields its port once it is live."""
    port = free_port()
    environ = {
        **os.environ,
        "STEWARD_ENV": "production",
        "STEWARD_SECRET_KEY": "deployment-test-key-" + "k" * 40,
        "DATABASE_URL": database_url(),
        "STEWARD_ALLOWED_HOSTS": "localhost",
        "STEWARD_LOG_LEVEL": "ERROR",
        **env,
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    process = subprocess.Popen(  # noqa: S603
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=environ,
    )

    def live() -> bool:
        base = f"http://127.0.0.1:{port}"
        try:
            healthcheck.check_http("/healthz", environ, base)
        except healthcheck.Unhealthy:
            return False
        return True

    try:
        wait_for(live, timeout=60, interval=0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
