"""Ctrl-C stops `make run` whole: web, worker, beat, consumers, the embedded PostgreSQL and
Redis, all gone within 10 s of SIGINT to its process group (what a terminal's Ctrl-C
sends) or of SIGTERM to its first process alone (what a supervisor sends), escalating to
SIGKILL itself. Celery beat had outlived both for over 20 s."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.support import ROOT, free_port, wait_for

STOPPED_WITHIN = 10.0  # seconds, the promise README makes


@pytest.fixture(scope="module")
def data_dir():
    """One embedded stack's data for both runs: the second reuses the first's migrations.
    Not under pytest's private temporary folder: PostgreSQL runs as another user as root."""
    path = Path(tempfile.mkdtemp(prefix="steward-run-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every live process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def _tree(*roots: int) -> set[int]:
    processes = _processes()
    tree, grew = set(roots), True
    while grew:
        more = {pid for pid, (parent, _) in processes.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def _alive(pids: set[int]) -> set[int]:
    processes = _processes()
    return {pid for pid in pids if pid in processes and processes[pid][1] != "Z"}


def _accepts(address, family=socket.AF_INET) -> bool:
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(address)
        except OSError:
            return False
        return True


def _start(data_dir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env |= {"STEWARD_DATA_DIR": str(data_dir), "STEWARD_PORT": str(port)}
    stack = subprocess.Popen(
        [sys.executable, "-m", "portal.devstack", "run"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a process group of its own, as a terminal gives it
    )

    def ready():
        try:
            return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(ready, timeout=240, interval=0.5)
    except BaseException:
        os.killpg(stack.pid, signal.SIGKILL)
        raise
    return stack, port


@pytest.mark.parametrize("how", ["SIGINT to the process group", "SIGTERM to the parent only"])
def test_every_process_of_make_run_is_gone_within_10_s(data_dir, how):
    stack, port = _start(data_dir)
    # postmaster.pid: pid, data directory, start time, port, socket directory, ...
    lines = next(data_dir.glob("postgres*/postmaster.pid")).read_text().splitlines()
    postmaster, postgres_socket = int(lines[0]), Path(lines[4]) / f".s.PGSQL.{lines[3]}"
    redis_socket = data_dir / "redis" / "redis.sock"
    children = _tree(stack.pid, postmaster) - {stack.pid}
    commands = " ".join(Path(f"/proc/{pid}/cmdline").read_text() for pid in _alive(children))
    for part in ("runserver", "worker", "beat", "run_consumers", "redis-server", "postgres"):
        assert part in commands, part

    signalled = time.monotonic()
    if how.startswith("SIGINT"):
        os.killpg(stack.pid, signal.SIGINT)
    else:
        os.kill(stack.pid, signal.SIGTERM)
    try:
        wait_for(lambda: not _alive(children), timeout=STOPPED_WITHIN, interval=0.1)
    except AssertionError:
        left = {pid: Path(f"/proc/{pid}/cmdline").read_text() for pid in _alive(children)}
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"still running {STOPPED_WITHIN} s after {how}: {left}") from None
    took = time.monotonic() - signalled
    assert stack.wait(timeout=STOPPED_WITHIN) == 0

    assert not _accepts(("127.0.0.1", port))
    assert not _accepts(str(postgres_socket), socket.AF_UNIX)
    assert not _accepts(str(redis_socket), socket.AF_UNIX)
    print(f"{how}: every process gone after {took:.1f} s")
