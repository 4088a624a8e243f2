"""A RabbitMQ node of Steward's own, for the AMQP transport's tests and the cluster
drill: Debian's rabbitmq-server, started under its own node name, ports, data directory
and Erlang cookie, so it never touches (nor depends on) a broker the machine already
runs."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from portal.devstack import StackError, _apt_install

RABBITMQ_PACKAGE = "rabbitmq-server"
# Debian's /usr/sbin wrapper switches to the rabbitmq user and its home; the scripts
# behind it run as whoever starts them, with the environment given.
SCRIPTS = Path("/usr/lib/rabbitmq/bin")


def _server() -> Path | None:
    server = SCRIPTS / "rabbitmq-server"
    return server if server.exists() else None


def ensure_rabbitmq() -> Path:
    """Debian's rabbitmq-server, installed when we can (as root, as Chromium is);
    otherwise one sentence that says what to install."""
    server = _server()
    may_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if server is None and may_install:
        print("Installing Debian's rabbitmq-server for the AMQP transport's tests...", flush=True)
        if _apt_install(RABBITMQ_PACKAGE):
            server = _server()
    if server is None:
        raise StackError(
            "The AMQP transport's tests need RabbitMQ: install Debian's package "
            f"(sudo apt-get install {RABBITMQ_PACKAGE})."
        )
    return server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RabbitNode:
    """One node in `base`, listening on `host`: start, stop (cleanly), kill (SIGKILL, as
    a host's sudden loss would) and start again on the same data, which is what a broker
    restart mid-stream needs."""

    USER = "steward"

    def __init__(self, base: Path, host: str = "127.0.0.1"):
        self.base = base
        self.host = host
        self.port = free_port()
        self.dist_port = free_port()
        self.name = f"steward-{self.port}@localhost"
        self.password = secrets.token_urlsafe(16)
        self.process: subprocess.Popen | None = None
        base.mkdir(parents=True, exist_ok=True)
        # A user of its own with a password of its own, made at the first boot, rather
        # than guest, which RabbitMQ lets in from loopback only: the cluster drill's
        # nodes connect from their network namespaces.
        (base / "rabbitmq.conf").write_text(
            f"default_user = {self.USER}\ndefault_pass = {self.password}\nloopback_users = none\n"
        )
        (base / "enabled_plugins").write_text("[].\n")

    @property
    def url(self) -> str:
        return f"amqp://{self.USER}:{self.password}@{self.host}:{self.port}//"

    def env(self) -> dict:
        base = str(self.base)
        return {
            **os.environ,
            "HOME": base,  # its own .erlang.cookie
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": self.host,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": f"{base}/mnesia",
            "RABBITMQ_LOG_BASE": f"{base}/log",
            "RABBITMQ_CONFIG_FILE": f"{base}/rabbitmq.conf",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{base}/enabled_plugins",
            "RABBITMQ_PID_FILE": f"{base}/node.pid",
        }

    def start(self, timeout: float = 120) -> None:
        server = ensure_rabbitmq()
        log = (self.base / "server.out").open("ab")
        self.process = subprocess.Popen(  # noqa: S603
            [str(server)],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StackError(f"RabbitMQ exited while starting; see {self.base}/server.out")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise StackError(f"RabbitMQ did not start within {timeout:.0f} s; see {self.base}")

    def kill(self) -> None:
        """SIGKILL the node and everything it started: no clean shutdown, nothing
        flushed but what its write-ahead logs already hold."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self._wait_gone()

    def stop(self) -> None:
        """Stop the node as `systemctl stop` does (SIGTERM: RabbitMQ shuts down cleanly),
        killing what is left of its process group after 60 s."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # helpers left behind, if any
        self._wait_gone()

    def _wait_gone(self, timeout: float = 30) -> None:
        """Until no process of the node's group is left. The script we started exits
        first; the Erlang VM under it may still hold the port for a moment, and a node
        started meanwhile would look up at once (its port answers) and then fail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise StackError(f"RabbitMQ's processes outlived SIGKILL; see {self.base}")
        self.process = None
