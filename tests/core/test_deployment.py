"""docker-compose.yml, the Dockerfile and CHANGELOG.md as shipped. No Docker engine
runs here, so these read the files and check what an operator relies on: settings
reach every Steward container, only the TLS proxy is published, every long-running
service has a health check its dependants wait on, and the image is built from the
lock file on a pinned base."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from tests.core.deployment import ROOT, healthcheck

COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
SERVICES = COMPOSE["services"]
STEWARD = sorted(name for name, service in SERVICES.items() if service.get("build") == ".")
LONG_RUNNING = [name for name in STEWARD if name != "migrate"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4}


def test_the_steward_services_are_the_ones_documented():
    assert STEWARD == ["beat", "consumers", "migrate", "web", "worker"]


@pytest.mark.parametrize("name", STEWARD)
def test_every_steward_service_reads_env_and_runs_in_production(name):
    service = SERVICES[name]
    assert service["env_file"] in (".env", [".env"])
    environment = service["environment"]
    assert environment["STEWARD_ENV"] == "production"
    # the stack's own wiring, never a default a forgotten .env would leave guessable
    assert environment["STEWARD_SECRET_KEY"].startswith("${STEWARD_SECRET_KEY:?")
    assert "${STEWARD_DB_PASSWORD:?" in environment["DATABASE_URL"]
    assert environment["POSTGRES_PASSWORD"] == ""


def test_only_the_proxy_is_published_and_it_alone_is_trusted_to_forward():
    published = sorted(name for name, service in SERVICES.items() if service.get("ports"))
    assert published == ["proxy"]
    assert {"80:80", "443:443"} <= set(SERVICES["proxy"]["ports"])
    on_edge = sorted(name for name, s in SERVICES.items() if "edge" in s.get("networks", []))
    assert on_edge == ["proxy", "web"]
    subnet = COMPOSE["networks"]["edge"]["ipam"]["config"][0]["subnet"]
    assert SERVICES["web"]["environment"]["STEWARD_TRUSTED_PROXIES"] == subnet
    assert SERVICES["proxy"]["depends_on"] == {"web": {"condition": "service_healthy"}}


def test_the_proxy_is_caddy_pinned_and_proxies_to_web_s_port():
    image = SERVICES["proxy"]["image"]
    assert re.fullmatch(r"caddy:\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", image)
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in SERVICES["proxy"]["volumes"]
    caddyfile = (ROOT / "deploy" / "Caddyfile").read_text()
    assert "{$STEWARD_SITE_ADDRESS:localhost}" in caddyfile
    web_port = re.search(r"-b 0\.0\.0\.0:(\d+)", " ".join(SERVICES["web"]["command"]))[1]
    assert f"dynamic a web {web_port}" in caddyfile


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_every_long_running_service_has_a_health_check_and_waits_on_health(name):
    service = SERVICES[name]
    test = service["healthcheck"]["test"]
    assert test[0] in ("CMD", "CMD-SHELL")
    if "/app/deploy/healthcheck.py" in test:
        mode = test[test.index("/app/deploy/healthcheck.py") + 1]
        assert mode in ("http", "beat", "consumers")  # the script's checks
    for needed, condition in service["depends_on"].items():
        wanted = "service_completed_successfully" if needed == "migrate" else "service_healthy"
        assert condition == {"condition": wanted}, needed


def test_each_service_s_check_is_the_one_its_role_needs():
    assert SERVICES["web"]["healthcheck"]["test"][-2:] == ["http", "/readyz"]
    assert "inspect ping -d celery@$$HOSTNAME" in SERVICES["worker"]["healthcheck"]["test"][1]
    assert SERVICES["beat"]["healthcheck"]["test"][-1] == "beat"
    assert SERVICES["consumers"]["healthcheck"]["test"][-1] == "consumers"
    assert SERVICES["migrate"]["healthcheck"] == {"disable": True}


def test_compose_runs_the_number_of_consumers_its_comment_and_the_guide_state():
    replicas = SERVICES["consumers"]["deploy"]["replicas"]
    block = COMPOSE_TEXT.split("\n  consumers:\n", 1)[1].split("\n  proxy:\n", 1)[0]
    stated = re.search(r"#\s*(\w+) for availability", block)[1].lower()
    assert NUMBERS[stated] == replicas
    guide = (ROOT / "docs" / "operations.md").read_text()
    assert NUMBERS[re.search(r"run (\w+) `run_consumers` processes", guide)[1]] == replicas


def test_the_image_is_built_in_two_stages_from_the_lock_on_a_pinned_base():
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.M)[1]
    assert re.fullmatch(r"python:3\.12\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", base)
    stages = re.findall(r"^FROM (\S+)(?: AS (\w+))?$", DOCKERFILE, re.M)
    assert stages == [("${PYTHON_IMAGE}", "builder"), ("${PYTHON_IMAGE}", "")]
    builder, runtime = DOCKERFILE.split("\nFROM ${PYTHON_IMAGE}\n")
    assert "pip install --require-hashes --no-deps -r /tmp/requirements.lock" in builder
    assert "build-essential" in builder and "build-essential" not in runtime
    assert "COPY --from=builder /opt/steward /opt/steward" in runtime
    assert re.search(r"^USER steward$", runtime, re.M)
    instructions = re.sub(r"\\\n\s*", "", runtime)  # continued lines joined
    healthcheck_line = re.search(r"^HEALTHCHECK .*$", instructions, re.M)[0]
    assert healthcheck_line.endswith('"/app/deploy/healthcheck.py", "http", "/healthz"]')


def test_the_image_s_check_asks_the_port_it_serves():
    assert healthcheck.WEB == "http://127.0.0.1:8000"
    assert DOCKERFILE.rstrip().endswith('"-b", "0.0.0.0:8000"]')


def test_the_changelog_s_newest_release_is_pyproject_s_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    releases = re.findall(r"^## \[?(\d+\.\d+\.\d+)\]?", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == version


def test_env_example_parses_as_compose_reads_it():
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*=\S*", line), line


# Values docker-compose.yml gives itself; .env.example shows them for information.
COMPOSE_SETS = {"STEWARD_ENV", "DATABASE_URL", "REDIS_URL", "STEWARD_TRUSTED_PROXIES"}
SETTINGS_DUMP = (
    "import json, portal.settings as s; "
    "print(json.dumps({k: repr(getattr(s, k)) for k in dir(s) if k.isupper()}))"
)


def _production_settings(**env: str) -> dict:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STEWARD_", "DATABASE_", "REDIS_", "EMAIL_"))
    }
    base |= {
        "STEWARD_ENV": "production",
        "STEWARD_SECRET_KEY": "defaults-test",
        "DATABASE_URL": "postgresql://steward:p@postgres:5432/steward",
        "REDIS_URL": "redis://redis:6379/0",
    }
    run = subprocess.run(  # noqa: S603
        [sys.executable, "-c", SETTINGS_DUMP],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_the_defaults_env_example_shows_are_steward_s_own():
    # given every commented `NAME=value` line of .env.example uncommented, as an
    # operator copying a default would
    shown = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        found = re.fullmatch(r"# ([A-Z][A-Z0-9_]*)=(\S.*?)(?:\s+#.*)?", line)
        if found and found[1] not in COMPOSE_SETS:
            shown[found[1]] = found[2].strip("'")
    assert len(shown) > 60
    # then production's settings are exactly those without them
    defaults = _production_settings()
    differing = {k: v for k, v in _production_settings(**shown).items() if v != defaults[k]}
    assert differing == {}
