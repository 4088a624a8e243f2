"""requirements.lock, which the image installs with --require-hashes, is current with
pyproject.toml and installs: every package pinned by version and hash, every dependency
of pyproject.toml in it at a version it allows, and pip able to install the whole set
(each file's hash checked, nothing missing) for the image's Python and platform."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.core.deployment import ROOT

LOCK = ROOT / "requirements.lock"
# The image's interpreter and platform: python:3.12 on Debian bookworm (glibc 2.36), x86-64.
IMAGE_PYTHON = "3.12"
IMAGE_PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(17, 37)]


def locked() -> dict[str, tuple[Version, list[str]]]:
    """{name: (version, hashes)} of every package in the lock."""
    entries: dict[str, tuple[Version, list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text()):
        head = block.split(maxsplit=1)[0] if block.strip() else ""
        if not head or head.startswith("#"):
            continue
        name, sep, version = head.partition("==")
        assert sep, f"not pinned with ==: {head}"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        entries[canonicalize_name(name)] = (Version(version), hashes)
    return entries


def test_every_locked_package_is_pinned_with_its_hashes():
    entries = locked()
    assert len(entries) > 40
    unhashed = sorted(name for name, (_, hashes) in entries.items() if not hashes)
    assert unhashed == []


def test_every_dependency_of_pyproject_is_locked_at_a_version_it_allows():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries = locked()
    wrong = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        entry = entries.get(canonicalize_name(requirement.name))
        if entry is None or not requirement.specifier.contains(entry[0], prereleases=True):
            wrong.append(f"{line} (locked: {entry[0] if entry else 'missing'})")
    assert wrong == [], f"make the lock again (docs/operations.md): {wrong}"


def test_the_command_that_makes_the_lock_is_the_documented_one():
    command = re.search(r"^#\s+(uv pip compile .*)$", LOCK.read_text(), re.M)[1]
    assert "--generate-hashes" in command and f"--python-version {IMAGE_PYTHON}" in command
    assert command in (ROOT / "docs" / "operations.md").read_text()


def test_pip_installs_the_lock_for_the_image(tmp_path):
    # --isolated: PyPI alone, as the image build sees it, without this machine's pip
    # configuration. --require-hashes also makes pip refuse a dependency the lock misses.
    platforms = [arg for platform in IMAGE_PLATFORMS for arg in ("--platform", platform)]
    report = tmp_path / "report.json"
    run = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--quiet"]
        + ["--ignore-installed", "--require-hashes", "--only-binary=:all:"]
        + ["--python-version", IMAGE_PYTHON, "--implementation", "cp", *platforms]
        + ["--report", str(report), "-r", str(LOCK)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    installed = {
        canonicalize_name(item["metadata"]["name"]): Version(item["metadata"]["version"])
        for item in json.loads(report.read_text())["install"]
    }
    assert installed == {name: version for name, (version, _) in locked().items()}
