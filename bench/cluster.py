"""`cluster`: Steward on several nodes while each kind of node is lost in turn.

    python -m bench cluster [--transport amqp|redis_stream] [--celery-broker redis|rabbitmq]

On one machine (as root), each of Steward's nodes runs in a network namespace of the
drill's own, joined by veth pairs to a bridge: two web nodes (gunicorn), two worker
nodes (Celery), the consumers and beat. The servers listen on the host's end of the
bridge: PostgreSQL with a streaming standby (pg_basebackup), PgBouncer in transaction
mode in front of it, Redis with a replica and three Sentinels, and RabbitMQ. The nodes
reach PostgreSQL through PgBouncer (STEWARD_DB_POOLER=transaction) and Redis through
the Sentinels (a redis+sentinel:// REDIS_URL). Where namespaces cannot be made, every
node runs on loopback instead, and the output says so (`network.namespaces`: false).

Events go over RabbitMQ (STEWARD_EVENT_TRANSPORT=amqp, the default here): the
dispatcher publishes to it with confirms, the consumers process reads its quorum
queues. `--transport redis_stream` runs the same drill with events on Redis streams
instead (through the Sentinels, so the Redis failover hits them) and no RabbitMQ.
Celery's broker is the Redis behind the Sentinels unless `--celery-broker rabbitmq`
puts the tasks' queues on the RabbitMQ node (STEWARD_CELERY_BROKER_URL); RabbitMQ's
restart then hits the workers too.

The chaos drill's mixed traffic (bench/chaos.py) goes to both web nodes in turn, as a
load balancer without health checks would send it; a request that fails (a killed
node, a 503) is sent again, with its Idempotency-Key, to the next node. Every status
the traffic and the Workflow Service's callbacks saw is counted. Faults, in order:

1. SIGKILL web-1's gunicorn while a request is in flight on it (then restarted, as a
   supervisor would);
2. SIGKILL worker-1's Celery worker (a replacement starts on the same node);
3. Redis failover: SIGKILL the primary; the Sentinels promote the replica;
4. PostgreSQL failover: SIGKILL the primary's postmaster, promote the standby
   (pg_promote), and repoint PgBouncer at it (a new [databases] line and RELOAD),
   which is what an operator's failover tooling does; the drill's own process uses a
   libpq multi-host URL with target_session_attrs=read-write instead;
5. restart RabbitMQ (when it carries the events or the tasks), the hard way: SIGKILL
   the node, start it again on its data, while events wait in its queues and in the
   outbox.

The verdict is the chaos drill's (0 lost, 0 applied twice, every order finished,
settled within its bound after the last fault) and, besides, no answer was a 5xx other
than 503, and every 503 had Retry-After.
Exit status: 0 when all holds, 1 when not, 2 when the drill could not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.chaos import (
    Api,
    Stack,
    WebhookReceiver,
    WorkflowService,
    _drill,
    bring_up,
    configure,
    free_port,
    say,
)
from bench.chaos_stack import BIN, DrillError, Processes, postgres_bin, remove, wait_until
from bench.cluster_stack import (
    Network as ClusterNetwork,
)
from bench.cluster_stack import (
    PgBouncer,
    PostgresPair,
    SentinelSet,
    stop,
)
from portal.devstack import APP_DATABASE, APP_ROLE, StackError, _ensure_app_role
from portal.rabbitmq import RabbitNode

NODES = ["web-1", "web-2", "worker-1", "worker-2", "consumers", "beat"]
WEB_NODES = ("web-1", "web-2")
WEB_PORT = 8000
# A killed worker's replacement runs on the same node, as its supervisor starts it.
NODE_OF = {"worker-3": "worker-1", "worker-4": "worker-2"}
WEB_PROCESSES = 2  # gunicorn processes per web node: two nodes share the drill's 2 cores
REDIS_PASSWORD = "cluster-drill-secret"  # noqa: S105 - the drill's throwaway server's
TRANSPORTS = ("amqp", "redis_stream")
CELERY_BROKERS = ("redis", "rabbitmq")
USAGE = (
    "usage: python -m bench cluster [--transport amqp|redis_stream]"
    " [--celery-broker redis|rabbitmq]"
)
# What the drill does not exercise, by transport (its output lists it).
NOT_COVERED = {
    "amqp": ["the lost primaries rejoining as standbys or replicas"],
    "redis_stream": [
        "RabbitMQ (run with --transport amqp)",
        "the lost primaries rejoining as standbys or replicas",
    ],
}
CELERY_NOT_COVERED = {"redis": "Celery on RabbitMQ (run with --celery-broker rabbitmq)"}


class RoundRobin(httpx.BaseTransport):
    """The drill's load balancer: each request to the next web node in turn, and every
    answer's status (or the failure to get one) counted."""

    def __init__(self, nodes: dict[str, tuple[str, int]]):
        self.inner = httpx.HTTPTransport()
        self.nodes = list(nodes.items())
        self.lock = threading.Lock()
        self.turn = 0
        self.statuses: Counter = Counter()
        self.in_flight: Counter = Counter()
        self.without_retry_after = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            node, (host, port) = self.nodes[self.turn % len(self.nodes)]
            self.turn += 1
            self.in_flight[node] += 1
        request.url = request.url.copy_with(host=host, port=port)
        request.headers["Host"] = f"{host}:{port}"
        try:
            response = self.inner.handle_request(request)
        except httpx.TransportError as exc:
            with self.lock:
                self.statuses[type(exc).__name__] += 1
            raise
        finally:
            with self.lock:
                self.in_flight[node] -= 1
        with self.lock:
            self.statuses[str(response.status_code)] += 1
            if response.status_code == 503 and "retry-after" not in response.headers:
                self.without_retry_after += 1
        return response


def answers_verdict(statuses: Counter, without_retry_after: int) -> dict:
    """Requests during a failover may answer 503 with Retry-After or not be answered at
    all (their node was killed); never a 500 or any other 5xx."""
    server_errors = {
        status: count
        for status, count in statuses.items()
        if status.isdigit() and int(status) >= 500 and status != "503"
    }
    return {
        "statuses": dict(sorted(statuses.items())),
        "server_errors": server_errors,
        "503_without_retry_after": without_retry_after,
        "ok": not server_errors and without_retry_after == 0,
    }


class Servers:
    """PostgreSQL and its standby, PgBouncer, Redis, its replica and three Sentinels, and
    (for the AMQP transport) a RabbitMQ node, on the host's end of the drill's bridge
    (PostgreSQL on loopback: only PgBouncer and the drill itself reach it)."""

    def __init__(
        self,
        root: Path,
        network: ClusterNetwork,
        transport: str = "amqp",
        celery_broker: str = "redis",
    ):
        self.root = root
        self.network = network
        self.transport = transport
        self.celery_broker = celery_broker
        self.logs = root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pair: PostgresPair | None = None
        self.bouncer: PgBouncer | None = None
        self.redis: SentinelSet | None = None
        self.rabbit: RabbitNode | None = None

    def start(self) -> None:
        from portal.debian_packages import ensure_binary

        programs, user = postgres_bin()
        directory = self.root / "pg"
        directory.mkdir()
        if user:
            os.chown(directory, *_ids(user))
        ports = {"primary": free_port(), "standby": free_port()}
        self.pair = PostgresPair(programs, directory, user, ports, {})
        initdb = [str(programs / "initdb"), "-D", str(directory / "primary"), "-U", "postgres"]
        self.pair.as_owner(*initdb, "--auth=trust", "--encoding=utf8")
        self.pair.start("primary")
        wait_until(lambda: self.pair.answers("primary"), timeout=60, what="PostgreSQL starting")
        _ensure_app_role(
            self.pair.url("primary", name="postgres", user="postgres"), self.direct_url
        )
        self.pair.standby_of_primary()
        wait_until(lambda: self.pair.answers("standby"), timeout=60, what="the standby starting")
        binary = ensure_binary("/usr/sbin/pgbouncer", package="pgbouncer", needed_for="the drill")
        here = self.root / "pgbouncer"
        here.mkdir(mode=0o755)
        self.bouncer = PgBouncer(
            here,
            self.network.host,
            free_port(),
            APP_ROLE,
            settings={
                "default_pool_size": 20,
                # A server that went away is tried again after 1 s, not 15; a client
                # waits at most 5 s for a server, then Steward answers 503.
                "server_login_retry": 1,
                "query_wait_timeout": 5,
            },
        )
        self.bouncer.start(binary, self._server("primary"), user)
        wait_until(self.bouncer.answers, timeout=20, what="PgBouncer starting")
        server = ensure_binary("redis-server", package="redis-server", needed_for="the drill")
        sentinel = ensure_binary("redis-sentinel", package="redis-sentinel", needed_for="the drill")
        here = self.root / "redis"
        here.mkdir(mode=0o755)
        names = ["primary", "replica", "sentinel0", "sentinel1", "sentinel2"]
        ports = {name: free_port() for name in names}
        self.redis = SentinelSet(here, REDIS_PASSWORD, ports, {}, host=self.network.host)
        self.redis.start(server, sentinel)
        wait_until(self.redis.ready, timeout=60, what="Redis and its Sentinels agreeing")
        if self.transport == "amqp" or self.celery_broker == "rabbitmq":
            self.rabbit = RabbitNode(self.root / "rabbitmq", host=self.network.host)
            self.rabbit.start()

    def event_settings(self) -> dict:
        """The environment that carries events over the drill's transport, and Celery's
        tasks over its broker (REDIS_URL's Redis unless STEWARD_CELERY_BROKER_URL)."""
        chosen = {"STEWARD_EVENT_TRANSPORT": self.transport}
        if self.transport == "amqp":
            chosen["STEWARD_AMQP_URL"] = self.rabbit.url
        if self.celery_broker == "rabbitmq":
            chosen["STEWARD_CELERY_BROKER_URL"] = self.rabbit.url
        return chosen

    def _server(self, which: str) -> str:
        return f"host=127.0.0.1 port={self.pair.ports[which]}"

    @property
    def database_url(self) -> str:
        """What the nodes use: PgBouncer."""
        return f"postgresql://{APP_ROLE}@{self.network.host}:{self.bouncer.port}/{APP_DATABASE}"

    @property
    def direct_url(self) -> str:
        """What the drill itself uses: both servers, the one taking writes chosen."""
        return self.pair.url("primary", "standby", name=APP_DATABASE, user=APP_ROLE)

    @property
    def redis_url(self) -> str:
        return self.redis.url

    def fail_over_redis(self) -> None:
        before = self.redis.primary_port()
        self.redis.kill("primary")
        wait_until(
            lambda: _quiet(self.redis.primary_port) not in (None, before),
            timeout=60,
            what="the Sentinels promoting the replica",
        )

    def fail_over_postgres(self) -> None:
        self.pair.crash("primary")
        self.pair.promote("standby")
        self.bouncer.repoint(self._server("standby"))

    def restart_rabbitmq(self) -> None:
        """SIGKILL the node (nothing flushed but its logs), then start it on its data, as
        a supervisor would: quorum queues and confirmed messages must come back."""
        self.rabbit.kill()
        self.rabbit.start()

    def stop(self) -> None:
        if self.rabbit is not None:
            self.rabbit.kill()  # the drill is over: nothing of it is kept
        for group in (self.redis, self.pair):
            if group is not None:
                stop(group.processes)
        if self.bouncer is not None and self.bouncer.process is not None:
            stop({"pgbouncer": self.bouncer.process})


def _quiet(read):
    try:
        return read()
    except Exception:  # noqa: BLE001 - a Sentinel busy failing over; asked again
        return None


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


class Nodes(Processes):
    """Steward's processes, each inside its node's namespace."""

    def __init__(self, env: dict, logs: Path, network: ClusterNetwork):
        super().__init__(env, logs)
        self.network = network
        # Without namespaces the web nodes share loopback and need ports of their own.
        self.web_ports = {node: WEB_PORT if network.isolated else free_port() for node in WEB_NODES}

    def start(self, name: str, command: list[str]):
        return super().start(name, [*self.network.prefix(NODE_OF.get(name, name)), *command])

    def web_node(self, node: str) -> None:
        bind = f"{self.network.address[node]}:{self.web_ports[node]}"
        self.start(
            node,
            [str(BIN / "gunicorn"), "portal.wsgi:application", "-b", bind]
            + ["--workers", str(WEB_PROCESSES), "--log-level", "warning"],
        )

    def web_addresses(self) -> dict[str, tuple[str, int]]:
        return {node: (self.network.address[node], self.web_ports[node]) for node in WEB_NODES}


def fault_plan(stack: Stack, balancer: RoundRobin) -> list:
    servers, nodes = stack.servers, stack.processes

    def kill_web_mid_request() -> None:
        wait_until(
            lambda: balancer.in_flight["web-1"] > 0,
            timeout=60,
            what="a request in flight on web-1",
            interval=0.005,
        )
        nodes.kill("web-1")
        nodes.web_node("web-1")  # as its supervisor would

    def kill_worker() -> None:
        nodes.kill("worker-1")
        nodes.worker("worker-3")

    plan = [
        (("SIGKILL web-1 mid-request",), kill_web_mid_request),
        (("SIGKILL worker-1",), kill_worker),
        (("Redis failover (SIGKILL primary)",), servers.fail_over_redis),
        (("PostgreSQL failover (SIGKILL primary, promote, repoint PgBouncer)",),
         servers.fail_over_postgres),
    ]  # fmt: skip
    if servers.rabbit is not None:
        plan.append((("restart RabbitMQ (SIGKILL, start on its data)",), servers.restart_rabbitmq))
    return plan


@contextlib.contextmanager
def cluster_stack(transport: str = "amqp", celery_broker: str = "redis"):
    """The network, servers and stand-ins, gone at the end (STEWARD_CHAOS_KEEP=1 keeps
    the directory, logs included)."""
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="steward-cluster-"))
    root.chmod(0o755)  # the servers' users reach their folders through it
    network = ClusterNetwork(NODES).create()
    servers = Servers(root, network, transport, celery_broker)
    nodes = None
    stand_ins = []
    try:
        servers.start()
        rng = random.Random(9)  # noqa: S311 - a reproducible drill, not a secret
        workflow = WorkflowService("http://web-1", rng, host=network.host)
        receiver = WebhookReceiver(host=network.host)
        stand_ins += [workflow, receiver]
        env = configure(servers, root, workflow.url)
        env["STEWARD_DB_POOLER"] = "transaction"
        env["STEWARD_ALLOWED_HOSTS"] = ",".join(["127.0.0.1", *network.address.values()])
        env["STEWARD_WEBHOOK_ALLOWED_NETWORKS"] = f"{network.host}/24,127.0.0.0/8"
        env.update(servers.event_settings())
        # The drill's own process goes to PostgreSQL itself, as libpq chooses.
        os.environ.update(servers.event_settings())
        os.environ.update(DATABASE_URL=servers.direct_url, STEWARD_DB_POOLER="none")
        nodes = Nodes(env, servers.logs, network)
        yield Stack(root, servers, nodes, workflow, receiver, WEB_PORT, started)
    finally:
        for stand_in in stand_ins:
            if isinstance(stand_in, WorkflowService):
                stand_in.stop.set()
            stand_in.close()
        if nodes is not None:
            nodes.stop()
        servers.stop()
        network.remove()
        if os.environ.get("STEWARD_CHAOS_KEEP") != "1":
            remove(root)
        else:
            say(f"kept {root}")


def run(transport: str = "amqp", celery_broker: str = "redis") -> dict:
    with cluster_stack(transport, celery_broker) as stack:
        nodes: Nodes = stack.processes
        balancer = RoundRobin(nodes.web_addresses())

        def start_nodes() -> Api:
            for node in WEB_NODES:
                nodes.web_node(node)
            nodes.worker("worker-1")
            nodes.worker("worker-2")
            nodes.beat()
            nodes.consumers()
            api = Api("http://web", deadline=120)
            api.http = httpx.Client(base_url="http://web", transport=balancer, timeout=15)
            stack.workflow.steward = httpx.Client(
                base_url="http://web", transport=balancer, timeout=10
            )
            return api

        def bring(stack: Stack):
            setup_env = {**nodes.env, "DATABASE_URL": stack.servers.direct_url}
            setup_env["STEWARD_DB_POOLER"] = "none"
            return bring_up(
                stack, quick=True, web_workers=WEB_PROCESSES, start_processes=start_nodes,
                setup_env=setup_env,
            )  # fmt: skip

        summary = _drill(
            stack, quick=True, name="cluster", plan=fault_plan(stack, balancer), bring=bring
        )
        answers = answers_verdict(balancer.statuses, balancer.without_retry_after)
        network = stack.servers.network
        summary["answers"] = answers
        summary["ok"] = summary["ok"] and answers["ok"]
        summary["network"] = {
            "namespaces": network.isolated,
            "nodes": {node: network.address[node] for node in NODES},
            "servers_at": network.host,
            **({"why_not": network.why_not} if not network.isolated else {}),
        }
        summary["database"] = "PgBouncer (transaction mode), repointed after promotion"
        summary["transport"] = transport
        summary["celery_broker"] = celery_broker
        summary["not_covered"] = [
            *NOT_COVERED[transport],
            *([CELERY_NOT_COVERED[celery_broker]] if celery_broker in CELERY_NOT_COVERED else []),
        ]
        return summary


def parse_options(argv: list[str]) -> dict | None:
    """The drill's options from `--flag value` pairs, or None when one is unknown."""
    allowed = {"--transport": TRANSPORTS, "--celery-broker": CELERY_BROKERS}
    chosen = {"--transport": "amqp", "--celery-broker": "redis"}
    if len(argv) % 2:
        return None
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        if value not in allowed.get(flag, ()):
            return None
        chosen[flag] = value
    return {"transport": chosen["--transport"], "celery_broker": chosen["--celery-broker"]}


def main(argv: list[str]) -> int:
    """`python -m bench cluster [--transport amqp|redis_stream] [--celery-broker
    redis|rabbitmq]`: 0 when nothing was lost or doubled and no answer was a 500, 1
    otherwise, 2 when the drill itself could not run."""
    options = parse_options(argv)
    if options is None:
        print(f"{USAGE} (got {' '.join(argv)})")
        return 2
    try:
        summary = run(**options)
    except (DrillError, StackError) as exc:
        print(json.dumps({"name": "cluster", "ok": False, "error": str(exc)}))
        return 2
    if not summary["network"]["namespaces"]:
        say("network namespaces could not be made: every node ran on loopback")
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
