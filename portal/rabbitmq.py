"""A RabbitMQ node of Steward's own, for the AMQP transport's tests: Debian's
rabbitmq-server, started under its own node name, ports, data directory and Erlang
cookie, so it never touches (nor depends on) a broker the machine already runs."""

from __future__ import annotations

import contextlib
import os
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
    """One node in `base`: start, stop (as a crash would: SIGKILL) and start again on
    the same data, which is what a broker restart mid-stream needs."""

    def __init__(self, base: Path):
        self.base = base
        self.port = free_port()
        self.dist_port = free_port()
        self.name = f"steward-{self.port}@localhost"
        self.process: subprocess.Popen | None = None
        base.mkdir(parents=True, exist_ok=True)
        # guest may connect from 127.0.0.1 only by default; the node listens there only.
        (base / "rabbitmq.conf").write_text("loopback_users.guest = true\n")
        (base / "enabled_plugins").write_text("[].\n")

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def env(self) -> dict:
        base = str(self.base)
        return {
            **os.environ,
            "HOME": base,  # its own .erlang.cookie
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
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
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise StackError(f"RabbitMQ did not start within {timeout:.0f} s; see {self.base}")

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
        self.process = None
