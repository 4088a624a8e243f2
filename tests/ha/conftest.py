"""The engines operators run in front of and beside Steward, started for real: Debian's
PgBouncer in transaction mode in front of the test database, and Redis with three
Sentinels. A machine without them stops the run with one sentence (portal.debian_packages)."""

from __future__ import annotations

import importlib.util
import os
import pwd
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import redis
from django.db import connection

from portal.debian_packages import ensure_binary
from portal.devstack import StackError
from portal.settings import prepare_threshold
from tests.eventing.conftest import topic  # noqa: F401 - the eventing paths' fixture
from tests.support import free_port, wait_for


def _needed(binary: str, package: str, needed_for: str) -> str:
    try:
        return ensure_binary(binary, package=package, needed_for=needed_for)
    except StackError as exc:
        pytest.fail(str(exc), pytrace=False)


def _world_readable_dir(prefix: str) -> Path:
    # The servers may run as the database's owner (PgBouncer refuses to run as root).
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o755)
    return directory


@dataclass
class PgBouncer:
    port: int
    user: str
    process: subprocess.Popen

    def admin(self, command: str) -> list[dict]:
        """A SHOW command on PgBouncer's admin console, its rows as dicts."""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, dbname="pgbouncer", user=self.user, autocommit=True
        ) as admin:
            cursor = psycopg.ClientCursor(admin)
            cursor.execute(command)
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="session")
def pgbouncer(django_db_setup, django_db_blocker):
    """Debian's PgBouncer in transaction mode in front of the test database, with fewer
    server connections (3) than the tests' clients, so clients share them."""
    binary = _needed("/usr/sbin/pgbouncer", "pgbouncer", "the connection pooler's tests")
    db = connection.settings_dict
    here = _world_readable_dir("steward-pgbouncer-")
    port = free_port()
    server = f"host={db['HOST']} port={db['PORT'] or 5432}"
    (here / "userlist.txt").write_text(f'"{db["USER"]}" ""\n')
    (here / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = {server}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {here / 'userlist.txt'}\n"
        f"admin_users = {db['USER']}\n"
        "pool_mode = transaction\ndefault_pool_size = 3\nmax_client_conn = 200\n"
        "ignore_startup_parameters = extra_float_digits\n"
    )
    for path in here.iterdir():
        path.chmod(0o644)
    command = [binary, str(here / "pgbouncer.ini")]
    if os.geteuid() == 0:
        socket_owner = Path(db["HOST"]).stat().st_uid if db["HOST"].startswith("/") else 0
        command[1:1] = ["-u", pwd.getpwuid(socket_owner).pw_name]
    log = (here / "pgbouncer.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
    bouncer = PgBouncer(port=port, user=db["USER"], process=process)

    def answers() -> bool:
        assert process.poll() is None, (here / "pgbouncer.log").read_text()
        try:
            bouncer.admin("SHOW VERSION")
        except psycopg.OperationalError:
            return False
        return True

    wait_for(answers, timeout=20)
    yield bouncer
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture
def through_pgbouncer(pgbouncer, transactional_db):
    """Every connection the test's threads open goes through PgBouncer, with the settings
    STEWARD_DB_POOLER=transaction gives (no prepared statements)."""
    db = connection.settings_dict
    saved = db["HOST"], db["PORT"], db["OPTIONS"]
    connection.close()
    db["HOST"], db["PORT"] = "127.0.0.1", str(pgbouncer.port)
    db["OPTIONS"] = {**saved[2], "prepare_threshold": prepare_threshold("off")}
    try:
        yield pgbouncer
    finally:
        connection.close()
        db["HOST"], db["PORT"], db["OPTIONS"] = saved


@dataclass
class SentinelSet:
    """A Redis primary, its replica and three Sentinels watching them as one service."""

    directory: Path
    password: str
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen]
    service: str = "steward"

    @property
    def url(self) -> str:
        sentinels = ",".join(f"127.0.0.1:{self.ports[f'sentinel{n}']}" for n in range(3))
        return f"redis+sentinel://:{self.password}@{sentinels}/{self.service}/0"

    def server(self, name: str) -> redis.Redis:
        return redis.Redis(port=self.ports[name], password=self.password, socket_timeout=5)

    def sentinel(self, n: int) -> redis.Redis:
        return redis.Redis(port=self.ports[f"sentinel{n}"], socket_timeout=5, decode_responses=True)

    def primary_port(self) -> int:
        return int(self.sentinel(0).sentinel_get_master_addr_by_name(self.service)[1])

    def kill(self, name: str) -> None:
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=20)


def _start(command: list[str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603


def _stop(processes: dict[str, subprocess.Popen]) -> None:
    for process in processes.values():
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


def _sentinels_ready(found: SentinelSet) -> bool:
    """Each Sentinel knows the primary, its replica in sync, and the other two."""
    try:
        if found.server("replica").info("replication")["master_link_status"] != "up":
            return False
        for n in range(3):
            replicas = found.sentinel(n).sentinel_slaves(found.service)
            if not replicas or "s_down" in replicas[0]["flags"]:
                return False
            if len(found.sentinel(n).sentinel_sentinels(found.service)) < 2:
                return False
    except (redis.RedisError, OSError, KeyError):
        return False
    return True


@pytest.fixture
def sentinel_redis():
    """Debian's redis-server as a primary and its replica, and three redis-sentinel
    processes watching them (quorum 2, a primary down after 1 s), each on its own port."""
    server = _needed("redis-server", "redis-server", "the Redis Sentinel tests")
    sentinel = _needed("redis-sentinel", "redis-sentinel", "the Redis Sentinel tests")
    here = _world_readable_dir("steward-sentinel-")
    password = "sentinel-test-secret"  # noqa: S105 - a throwaway server's
    names = ["primary", "replica", "sentinel0", "sentinel1", "sentinel2"]
    found = SentinelSet(here, password, {name: free_port() for name in names}, {})
    base = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(here)]
    auth = ["--requirepass", password, "--masterauth", password]
    for name in ("primary", "replica"):
        follows = ["--replicaof", "127.0.0.1", str(found.ports["primary"])]
        command = [server, "--port", str(found.ports[name]), *base, *auth]
        command += follows if name == "replica" else []
        found.processes[name] = _start(command, here / f"{name}.log")
    for n in range(3):
        conf = here / f"sentinel{n}.conf"
        conf.write_text(
            f"port {found.ports[f'sentinel{n}']}\nbind 127.0.0.1\ndir {here}\n"
            f"sentinel monitor {found.service} 127.0.0.1 {found.ports['primary']} 2\n"
            f"sentinel auth-pass {found.service} {password}\n"
            f"sentinel down-after-milliseconds {found.service} 1000\n"
            f"sentinel failover-timeout {found.service} 10000\n"
        )
        found.processes[f"sentinel{n}"] = _start([sentinel, str(conf)], here / f"sentinel{n}.log")
    try:
        wait_for(lambda: all(_answers(found.server(n)) for n in ("primary", "replica")))
        wait_for(lambda: _sentinels_ready(found), timeout=60)
        yield found
    finally:
        _stop(found.processes)


SUPERUSER = "postgres"  # the embedded server's (pgserver's)


@dataclass
class PostgresPair:
    """Two PostgreSQL servers on loopback: a primary copied from the test database's
    server, and a streaming standby of it."""

    bin: Path
    directory: Path
    user: str
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen]

    def url(self, *order: str, name: str, user: str) -> str:
        servers = ",".join(f"127.0.0.1:{self.ports[n]}" for n in order)
        return f"postgresql://{user}@{servers}/{name}?target_session_attrs=read-write"

    def admin(self, which: str) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.ports[which],
            dbname="postgres",
            user=SUPERUSER,
            autocommit=True,
        )

    def as_owner(self, *command: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True)  # noqa: S603

    def start(self, which: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if os.geteuid() == 0 else []
        command = [str(self.bin / "postgres"), "-D", str(self.directory / which)]
        command += ["-p", str(self.ports[which]), "-c", "listen_addresses=127.0.0.1"]
        command += ["-k", str(self.directory)]
        self.processes[which] = _start([*prefix, *command], self.directory / f"{which}.log")
        wait_for(lambda: self._answers(which), timeout=60)

    def _answers(self, which: str) -> bool:
        assert self.processes[which].poll() is None, (self.directory / f"{which}.log").read_text()
        try:
            self.admin(which).close()
        except psycopg.OperationalError:
            return False
        return True

    def crash(self, which: str) -> None:
        """SIGKILL the server's postmaster, as a host's sudden loss would."""
        pid = int((self.directory / which / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        self.processes[which].wait(timeout=20)


@pytest.fixture
def postgres_pair(transactional_db):
    """Steward's test database on a primary of its own and a streaming standby of it,
    both copied with pg_basebackup (the rows committed so far included)."""
    db = connection.settings_dict
    if not db["HOST"].startswith("/"):
        pytest.fail("The failover test copies the embedded PostgreSQL; unset DATABASE_URL.")
    here = _world_readable_dir("steward-pg-pair-")
    owner = pwd.getpwuid(Path(db["HOST"]).stat().st_uid).pw_name
    os.chown(here, Path(db["HOST"]).stat().st_uid, -1)
    pair = PostgresPair(
        # pgserver's own PostgreSQL, found without importing it (its import warns).
        Path(importlib.util.find_spec("pgserver").origin).parent / "pginstall" / "bin",
        here,
        owner,
        {"primary": free_port(), "standby": free_port()},
        {},
    )
    backup = [str(pair.bin / "pg_basebackup"), "-U", SUPERUSER, "-X", "stream", "-c", "fast"]
    try:
        pair.as_owner(*backup, "-h", db["HOST"], "-D", str(here / "primary"))
        pair.start("primary")
        from_primary = ["-h", "127.0.0.1", "-p", str(pair.ports["primary"])]
        pair.as_owner(*backup, *from_primary, "-R", "-D", str(here / "standby"))
        pair.start("standby")
        yield pair
    finally:
        _stop(pair.processes)
