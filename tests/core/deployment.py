"""What the deployment tests share: the shipped health checks as a module, and Steward
as the image runs it (gunicorn, production settings) on the test database."""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

from tests.support import gunicorn_process

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
    cookies, the HTTPS redirect), on the test database. Yields its port once it is live,
    asked as the image's health check asks (production refuses a plain ask)."""
    environ = {
        "STEWARD_ENV": "production",
        "STEWARD_SECRET_KEY": "deployment-test-key-" + "k" * 40,
        "STEWARD_ALLOWED_HOSTS": "localhost",
        "STEWARD_LOG_LEVEL": "ERROR",
        **env,
    }

    def live(port: int) -> bool:
        try:
            healthcheck.check_http(
                "/healthz", {**os.environ, **environ}, f"http://127.0.0.1:{port}"
            )
        except healthcheck.Unhealthy:
            return False
        return True

    with gunicorn_process(workers=1, ready=live, **environ) as port:
        yield port
