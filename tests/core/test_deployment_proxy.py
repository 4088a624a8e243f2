"""The shipped Caddyfile, run by a real Caddy (Debian's, installed when the suite runs as
root, as devstack does for Chromium): it is valid, terminates TLS with its local CA,
sends the forwarded headers Steward relies on, and a person signs in through it to
Steward under production settings."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from portal.devstack import _apt_install
from tests.core.deployment import ROOT, production_web
from tests.factories import member
from tests.support import LocalServer, free_port, wait_for

CADDYFILE = ROOT / "deploy" / "Caddyfile"
UPSTREAM = "dynamic a web 8000"


@pytest.fixture(scope="module")
def caddy() -> str:
    path = shutil.which("caddy")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        print("Installing Debian's caddy for the proxy's tests...", flush=True)
        if _apt_install("caddy"):
            path = shutil.which("caddy")
    if path is None:
        pytest.fail("The proxy's tests need Caddy: sudo apt-get install caddy", pytrace=False)
    return path


def _caddy_env(home: Path, **env: str) -> dict:
    # Caddy keeps its CA and certificates under XDG_DATA_HOME: the test's own, not root's.
    return {**os.environ, "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home), **env}


def test_the_shipped_caddyfile_is_valid(caddy, tmp_path):
    check = subprocess.run(  # noqa: S603
        [caddy, "validate", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=_caddy_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr[-2000:]
    assert "Valid configuration" in check.stdout + check.stderr


@dataclass
class Proxy:
    https_port: int
    http_port: int
    root_certificate: Path

    @property
    def url(self) -> str:
        return f"https://localhost:{self.https_port}"


@contextlib.contextmanager
def running_proxy(caddy: str, home: Path, upstream_port: int) -> Iterator[Proxy]:
    """The shipped Caddyfile with two changes only: the upstream is looked up as
    127.0.0.1 rather than compose's `web`, and the plain-HTTP port is a free one."""
    proxy = Proxy(free_port(), free_port(), home / "data/caddy/pki/authorities/local/root.crt")
    text = CADDYFILE.read_text()
    assert UPSTREAM in text and "\tadmin off\n" in text
    text = text.replace(UPSTREAM, f"dynamic a 127.0.0.1 {upstream_port}")
    text = text.replace("\tadmin off\n", f"\tadmin off\n\thttp_port {proxy.http_port}\n")
    config = home / "Caddyfile"
    config.write_text(text)
    env = _caddy_env(home, STEWARD_SITE_ADDRESS=f"localhost:{proxy.https_port}")
    process = subprocess.Popen(  # noqa: S603
        [caddy, "run", "--config", str(config), "--adapter", "caddyfile"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def serving() -> bool:
        if not proxy.root_certificate.exists():
            return False
        try:
            context = ssl.create_default_context(cafile=str(proxy.root_certificate))
            with httpx.Client(verify=context, timeout=5) as client:
                client.get(proxy.url + "/healthz")
        except (httpx.HTTPError, ssl.SSLError):
            return False
        return True

    try:
        wait_for(serving, timeout=30, interval=0.1)
        yield proxy
    finally:
        process.terminate()
        process.wait(timeout=30)


def _client(proxy: Proxy) -> httpx.Client:
    # Trusting Caddy's local root, as the README asks of a person's machine.
    context = ssl.create_default_context(cafile=str(proxy.root_certificate))
    return httpx.Client(base_url=proxy.url, verify=context, timeout=10)


def test_the_proxy_terminates_tls_and_forwards_what_steward_reads(caddy, tmp_path):
    with LocalServer(lambda received: (200, received.headers)) as upstream:
        with running_proxy(caddy, tmp_path, upstream.server.server_address[1]) as proxy:
            with _client(proxy) as client:
                spoofed = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "http"}
                seen = client.get("/api/v1/whoami/", headers=spoofed).json()
            plain = httpx.get(f"http://localhost:{proxy.http_port}/login/", timeout=10)
    # the client's own forwarded headers are replaced, not passed on
    assert seen["x-forwarded-for"] == "127.0.0.1"
    assert seen["x-forwarded-proto"] == "https"
    assert seen["host"] == f"localhost:{proxy.https_port}"
    # plain HTTP only redirects to HTTPS
    assert plain.status_code in (301, 308)
    assert plain.headers["location"] == f"https://localhost:{proxy.https_port}/login/"


@pytest.mark.django_db(transaction=True)
def test_a_person_signs_in_through_the_proxy_under_production_settings(caddy, tmp_path, tenant_a):
    person = member(tenant_a, username="through-the-proxy")
    with production_web(STEWARD_TRUSTED_PROXIES="127.0.0.1/32") as web_port:
        with running_proxy(caddy, tmp_path, web_port) as proxy, _client(proxy) as client:
            form = client.get("/login/")
            assert form.status_code == 200
            assert "__Host-steward_csrftoken" in client.cookies
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)[1]
            signed_in = client.post(
                "/login/",
                data={
                    "username": person.username,
                    "password": "correct horse battery",
                    "csrfmiddlewaretoken": token,
                },
                headers={"Referer": f"{proxy.url}/login/"},
            )
            assert signed_in.status_code == 302, signed_in.text[-500:]
            session = signed_in.headers.get_list("set-cookie")
            assert any(c.startswith("__Host-steward_session=") and "Secure" in c for c in session)
            whoami = client.get("/api/v1/whoami/")
    assert whoami.status_code == 200, whoami.text
    assert json.loads(whoami.text)["name"] == person.username
