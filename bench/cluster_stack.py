"""The engines a cluster of Steward runs on, started for real on one machine: Debian's
PgBouncer (transaction mode), Redis with a replica and three Sentinels, PostgreSQL with a
streaming standby, and network namespaces for Steward's nodes.

The cluster drill (bench/cluster.py) and the HA tests (tests/ha/conftest.py) both start
their servers here. Nothing here imports Django.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis

SUPERUSER = "postgres"


def start(command: list[str], log: Path) -> subprocess.Popen:
    with log.open("a") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603


def stop(processes: dict[str, subprocess.Popen]) -> None:
    for process in processes.values():
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def world_readable_dir(prefix: str) -> Path:
    # The servers may run as the database's owner (PgBouncer refuses to run as root).
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o755)
    return directory


def as_user(user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--"] if user and os.geteuid() == 0 else []


# --------------------------------------------------------------------------- PgBouncer


@dataclass
class PgBouncer:
    """PgBouncer in transaction mode in front of one PostgreSQL server; `repoint` moves
    it to another, as an operator's failover tooling does (a new [databases] line and a
    RELOAD: clients keep their connections to PgBouncer)."""

    directory: Path
    listen: str
    port: int
    user: str
    process: subprocess.Popen | None = None
    settings: dict = field(default_factory=dict)

    def write(self, server: str) -> None:
        settings = "".join(f"{key} = {value}\n" for key, value in self.settings.items())
        (self.directory / "userlist.txt").write_text(f'"{self.user}" ""\n')
        (self.directory / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = {server}\n"
            "[pgbouncer]\n"
            f"listen_addr = {self.listen}\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.directory / 'userlist.txt'}\n"
            f"admin_users = {self.user}\n"
            "pool_mode = transaction\nmax_client_conn = 200\n"
            "ignore_startup_parameters = extra_float_digits\n" + settings
        )
        for path in self.directory.iterdir():
            path.chmod(0o644)

    def start(self, binary: str, server: str, run_as: str | None) -> None:
        self.write(server)
        command = [binary, str(self.directory / "pgbouncer.ini")]
        if os.geteuid() == 0:
            command[1:1] = ["-u", run_as or "postgres"]
        self.process = start(command, self.directory / "pgbouncer.log")

    def answers(self) -> bool:
        assert self.process.poll() is None, (self.directory / "pgbouncer.log").read_text()
        try:
            self.admin("SHOW VERSION")
        except psycopg.OperationalError:
            return False
        return True

    def admin(self, command: str) -> list[dict]:
        """A command on PgBouncer's admin console, its rows (if any) as dicts."""
        with psycopg.connect(
            host=self.listen, port=self.port, dbname="pgbouncer", user=self.user, autocommit=True
        ) as admin:
            cursor = psycopg.ClientCursor(admin)
            cursor.execute(command)
            if cursor.description is None:
                return []
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def repoint(self, server: str) -> None:
        self.write(server)
        self.admin("RELOAD")


# --------------------------------------------------------------------------- Redis


@dataclass
class SentinelSet:
    """A Redis primary, its replica and three Sentinels watching them as one service."""

    directory: Path
    password: str
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen]
    service: str = "steward"
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        sentinels = ",".join(f"{self.host}:{self.ports[f'sentinel{n}']}" for n in range(3))
        return f"redis+sentinel://:{self.password}@{sentinels}/{self.service}/0"

    def server(self, name: str) -> redis.Redis:
        return redis.Redis(
            host=self.host, port=self.ports[name], password=self.password, socket_timeout=5
        )

    def sentinel(self, n: int) -> redis.Redis:
        return redis.Redis(
            host=self.host, port=self.ports[f"sentinel{n}"], socket_timeout=5, decode_responses=True
        )

    def primary_port(self) -> int:
        return int(self.sentinel(0).sentinel_get_master_addr_by_name(self.service)[1])

    def kill(self, name: str) -> None:
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=20)

    def start(self, server: str, sentinel: str) -> None:
        """`server` as the primary and its replica, and three `sentinel`s watching them
        (quorum 2, a primary down after 1 s), each on its own port."""
        base = ["--bind", self.host, "--save", "", "--appendonly", "no", "--dir"]
        base.append(str(self.directory))
        auth = ["--requirepass", self.password, "--masterauth", self.password]
        for name in ("primary", "replica"):
            follows = ["--replicaof", self.host, str(self.ports["primary"])]
            command = [server, "--port", str(self.ports[name]), *base, *auth]
            command += follows if name == "replica" else []
            self.processes[name] = start(command, self.directory / f"{name}.log")
        for n in range(3):
            conf = self.directory / f"sentinel{n}.conf"
            conf.write_text(
                f"port {self.ports[f'sentinel{n}']}\nbind {self.host}\ndir {self.directory}\n"
                f"sentinel monitor {self.service} {self.host} {self.ports['primary']} 2\n"
                f"sentinel auth-pass {self.service} {self.password}\n"
                f"sentinel down-after-milliseconds {self.service} 1000\n"
                f"sentinel failover-timeout {self.service} 10000\n"
            )
            command = [sentinel, str(conf)]
            self.processes[f"sentinel{n}"] = start(command, self.directory / f"sentinel{n}.log")

    def answering(self) -> bool:
        return all(_answers(self.server(name)) for name in ("primary", "replica"))

    def ready(self) -> bool:
        """Each Sentinel knows the primary, its replica in sync, and the other two."""
        try:
            if self.server("replica").info("replication")["master_link_status"] != "up":
                return False
            for n in range(3):
                replicas = self.sentinel(n).sentinel_slaves(self.service)
                if not replicas or "s_down" in replicas[0]["flags"]:
                    return False
                if len(self.sentinel(n).sentinel_sentinels(self.service)) < 2:
                    return False
        except (redis.RedisError, OSError, KeyError):
            return False
        return True


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


# --------------------------------------------------------------------------- PostgreSQL


@dataclass
class PostgresPair:
    """Two PostgreSQL servers on loopback: a primary and a streaming standby of it."""

    bin: Path
    directory: Path
    user: str | None
    ports: dict[str, int]
    processes: dict[str, subprocess.Popen]

    def url(self, *order: str, name: str, user: str) -> str:
        servers = ",".join(f"127.0.0.1:{self.ports[n]}" for n in order)
        return f"postgresql://{user}@{servers}/{name}?target_session_attrs=read-write"

    def admin(self, which: str, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.ports[which],
            dbname=dbname,
            user=SUPERUSER,
            autocommit=True,
            connect_timeout=5,
        )

    def as_owner(self, *command: str) -> None:
        subprocess.run([*as_user(self.user), *command], check=True, capture_output=True)  # noqa: S603

    def start(self, which: str) -> None:
        command = [str(self.bin / "postgres"), "-D", str(self.directory / which)]
        command += ["-p", str(self.ports[which]), "-c", "listen_addresses=127.0.0.1"]
        command += ["-k", str(self.directory)]
        self.processes[which] = start(
            [*as_user(self.user), *command], self.directory / f"{which}.log"
        )

    def answers(self, which: str) -> bool:
        assert self.processes[which].poll() is None, (self.directory / f"{which}.log").read_text()
        try:
            self.admin(which).close()
        except psycopg.OperationalError:
            return False
        return True

    def base_backup(self, which: str, *source: str) -> None:
        """A copy of the server `source` names (libpq's -h/-p) into `which`; `-R` makes
        it a standby that streams from there."""
        command = [str(self.bin / "pg_basebackup"), "-U", SUPERUSER, "-X", "stream", "-c", "fast"]
        self.as_owner(*command, *source, "-D", str(self.directory / which))

    def standby_of_primary(self) -> None:
        self.base_backup("standby", "-h", "127.0.0.1", "-p", str(self.ports["primary"]), "-R")
        self.start("standby")

    def crash(self, which: str) -> None:
        """SIGKILL the server's postmaster, as a host's sudden loss would."""
        pid = int((self.directory / which / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        self.processes[which].wait(timeout=20)

    def promote(self, which: str) -> None:
        with self.admin(which) as server:
            server.execute("SELECT pg_promote(wait => true)")


# --------------------------------------------------------------------------- namespaces


class Network:
    """A bridge on the host and one network namespace per node, joined to it by a veth
    pair. The host's end of the bridge (`host`) is where the servers listen; a node's
    own address is `address[node]`. Where namespaces cannot be made (not root, no
    `ip`), `isolated` is False and every node runs on loopback instead."""

    def __init__(self, nodes: list[str]):
        tag = os.getpid() % 100000
        self.bridge = f"stwbr{tag}"
        self.subnet = f"10.{77 + tag % 150}.{tag % 250}"
        self.nodes = nodes
        self.namespaces = {node: f"stw{tag}-{node}" for node in nodes}
        self.isolated = False
        self.why_not = ""
        self.host = "127.0.0.1"
        self.address = dict.fromkeys(nodes, "127.0.0.1")

    def create(self) -> Network:
        probe = f"stw{os.getpid() % 100000}-probe"
        try:
            _ip("netns", "add", probe)
            _ip("netns", "del", probe)
        except (OSError, subprocess.CalledProcessError) as exc:
            self.why_not = getattr(exc, "stderr", "") or str(exc)
            return self
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for n, node in enumerate(self.nodes, start=11):
            ns, veth = self.namespaces[node], f"{self.bridge}v{n}"
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", f"{self.subnet}.{n}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            self.address[node] = f"{self.subnet}.{n}"
        self.host = f"{self.subnet}.1"
        self.isolated = True
        return self

    def prefix(self, node: str) -> list[str]:
        """What runs a command inside `node`'s namespace (`ip netns exec` execs it: the
        process keeps its pid, so signals reach it as they would without)."""
        return ["ip", "netns", "exec", self.namespaces[node]] if self.isolated else []

    def remove(self) -> None:
        if not self.isolated:
            return
        for ns in self.namespaces.values():
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", ns)  # its end of each veth pair goes with it
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("link", "del", self.bridge)
        self.isolated = False


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)  # noqa: S603, S607
