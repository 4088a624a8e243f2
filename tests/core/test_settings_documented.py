"""Every environment variable Steward reads is documented for operators, and can be
given in docker-compose's .env (.env.example lists it)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A whole string literal naming a variable: env("X"), env_int("X"), networks("X"),
# environ.get("X")... A trailing underscore is a prefix (STEWARD_WEBHOOK_SECRET_), not one.
NAMED = re.compile(r"""["']((?:STEWARD|DATABASE|REDIS)_[A-Z0-9_]*[A-Z0-9])["']""")
# devstack also hands names to the processes it starts; only what it reads counts there.
DEVSTACK_READS = re.compile(
    r"""(?:env(?:_int|_bool)?\(|environ(?:\.get\(|\[))\s*["']((?:STEWARD|DATABASE|REDIS)_[A-Z0-9_]+)["']"""
)
ASSIGNED = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=", re.M)


def names_read() -> set[str]:
    return set(NAMED.findall((ROOT / "portal" / "settings.py").read_text()))


def test_every_setting_read_is_in_the_operations_guide():
    devstack = (ROOT / "portal" / "devstack.py").read_text()
    names = names_read() | set(DEVSTACK_READS.findall(devstack))
    assert len(names) > 80  # the pattern still finds what settings.py reads
    guide = (ROOT / "docs" / "operations.md").read_text()
    missing = sorted(name for name in names if f"`{name}`" not in guide)
    assert missing == [], f"document these in docs/operations.md (Settings): {missing}"


def test_every_setting_of_the_deployment_is_in_env_example():
    # devstack's settings (`make run`, `make test`) are no deployment's.
    names = names_read()
    listed = set(ASSIGNED.findall((ROOT / ".env.example").read_text()))
    missing = sorted(names - listed)
    assert missing == [], f"list these in .env.example with their defaults: {missing}"


def test_env_example_lists_nothing_steward_does_not_read():
    compose_only = {"POSTGRES_PASSWORD", "STEWARD_DB_PASSWORD", "STEWARD_SITE_ADDRESS"}
    compose_only.add("STEWARD_EDGE_SUBNET")
    listed = set(ASSIGNED.findall((ROOT / ".env.example").read_text()))
    unknown = sorted(listed - names_read() - compose_only)
    assert unknown == []
