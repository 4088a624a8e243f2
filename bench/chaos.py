"""`chaos`: the whole stack under traffic while a worker dies and both servers restart.

    python -m bench chaos [--quick]

Brings its own PostgreSQL and Redis (bench/chaos_stack.py; no system services, no
DATABASE_URL/REDIS_URL needed), migrates, sets up tenants and service accounts, and
starts Steward as deployed: gunicorn (gunicorn.conf.py), two Celery workers, Celery
beat (DatabaseScheduler) and `run_consumers`. Stand-ins for the other side run inside
the drill: a Workflow Service (starts approval instances, sends signed decisions,
duplicates included), a compute service (reports batches finished), a provisioning
service (reports a binding's migrations applied) and a webhook receiver.

Traffic goes through the HTTP API in every domain — assets delegated for approval,
compute batches, store bindings, ModelSync releases, a governance export, and the
events all of these emit to the consumers and the webhook — while the drill SIGKILLs
a worker (a replacement starts, as a supervisor would), restarts Redis and PostgreSQL
cleanly (full run only), crashes PostgreSQL (`pg_ctl stop -m immediate`: recovery
from WAL), SIGKILLs Redis, pauses it with SIGSTOP longer than every client timeout,
SIGKILLs web, beat, the consumers and the second worker, empties Redis with FLUSHALL
while every client stays connected (full run only), and finally kills Redis and
removes its files, so it comes back empty; both times Steward must re-drive from
PostgreSQL (apps.eventing.redrive). When the traffic has stopped it waits for the stack to
settle and checks the database (bench/chaos_verify.py): every event handled once per
consumer, every callback's decision applied once, every batch link resolved once,
every binding active with each step once, every schema version published once, the
governance order complete — all within SETTLE_BOUND_SECONDS of the last fault. The
last line is one JSON object; the exit status is 1 when anything was lost or applied
twice, or the stack did not settle within the bound.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.chaos_stack import DrillError, Processes, Servers, remove, wait_until

CALLBACK_SECRET = "chaos-callback-secret"  # the drill's own throwaway secrets
WEBHOOK_SECRET = "chaos-webhook-secret"
WEBHOOK_SECRET_VAR = "STEWARD_WEBHOOK_SECRET_CHAOS"
DUPLICATE_CALLBACKS = 0.3
WEBHOOK_TOPICS = ("assets.asset", "compute.step")
RESUMING_SWEEPS = ("assets.periodic_resume_delegations", "stores.periodic_resume_bindings")
STALLED_WORK_SECONDS = "5"
# Rounds of traffic before the first fault and between two faults (quick: full).
FIRST_FAULT_ROUNDS = {True: 2, False: 6}
SPACING = {True: 1, False: 4}
# Longer than every client's Redis timeout: Steward's own (apps.core.redis: 5 s read,
# 2 s connect), the database pool's wait (3 s) and a consumer's blocking read (1 s).
REDIS_PAUSE_SECONDS = 8.0
# A killed worker's replacement, as a supervisor starts one.
REPLACEMENTS = {"worker-1": "worker-3", "worker-2": "worker-4"}
# Everything is consistent again within this long after the last fault. What sets it:
# a consumer runner's Redis lease (30 s) outlives a killed consumers process, the
# drill's sweeps run every 5 s, the governance order advances once a minute, and a
# webhook's retries back off (0.5 s doubling).
SETTLE_BOUND_SECONDS = 150.0


def say(message: str) -> None:
    print(f"chaos: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- stand-ins


class StandIn:
    """A service on the other side: the test suite's loopback HTTP server
    (tests/support.py) answering `respond(method, path, headers, body)`."""

    def __init__(self, host: str = "127.0.0.1"):
        from tests.support import LocalServer

        self.server = LocalServer(
            respond=lambda got: self.respond(got.method, got.path, got.headers, got.body),
            host=host,
        ).__enter__()

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.__exit__(None, None, None)

    def respond(self, method, path, headers, body) -> tuple[int, dict]:
        raise NotImplementedError


class WorkflowService(StandIn):
    """Starts one approval instance per idempotency key and, a moment later, sends its
    decision to Steward's callback endpoint, signed, retrying until Steward has recorded
    it; a share of the decisions is sent twice, as an at-least-once sender does."""

    def __init__(self, steward_url: str, rng: random.Random, host: str = "127.0.0.1"):
        super().__init__(host)
        self.steward = httpx.Client(base_url=steward_url, timeout=10)
        self.rng = rng
        self.lock = threading.Lock()
        self.by_key: dict[str, str] = {}
        self.decisions: dict[str, tuple[str, str]] = {}  # asset id -> (instance, decision)
        self.outbox: list[tuple[float, str, str, str]] = []  # (due, instance, decision, id)
        self.sent = Counter()
        self.stop = threading.Event()
        self.sender = threading.Thread(target=self._send_forever, daemon=True)
        self.sender.start()

    def respond(self, method, path, headers, body):
        if method == "POST" and path == "/instances":
            start = json.loads(body)
            key, asset = start["idempotency_key"], start["subject"]["id"]
            with self.lock:
                if key not in self.by_key:
                    instance = str(uuid.uuid4())
                    decision = "approve" if self.rng.random() < 0.7 else "reject"
                    self.by_key[key] = instance
                    self.decisions[asset] = (instance, decision)
                    # Decided a moment later, usually after Steward stored the instance.
                    self.outbox.append((time.monotonic() + 0.3, instance, decision, "first"))
                    if self.rng.random() < DUPLICATE_CALLBACKS:
                        self.outbox.append((time.monotonic() + 1.5, instance, decision, "dup"))
                return 201, {"instance_id": self.by_key[key]}
        if method == "GET" and "idempotency_key=" in path:
            key = path.split("idempotency_key=", 1)[1]
            with self.lock:
                instance = self.by_key.get(key)
            return (200, {"instance_id": instance}) if instance else (404, {})
        return 404, {}

    def _send_forever(self) -> None:
        from apps.eventing.transports import webhook_signature

        while not self.stop.is_set():
            now = time.monotonic()
            with self.lock:
                due = [item for item in self.outbox if item[0] <= now]
                self.outbox = [item for item in self.outbox if item[0] > now]
            for _, instance, decision, kind in due:
                body = json.dumps({"workflow_instance_id": instance, "decision": decision})
                callback_id, stamp = f"cb-{uuid.uuid4().hex[:12]}", int(time.time())
                signature = webhook_signature(
                    CALLBACK_SECRET.encode(), callback_id, stamp, body.encode()
                )
                try:
                    answer = self.steward.post(
                        "/api/v1/assets/workflow-callbacks/",
                        content=body,
                        headers={
                            "content-type": "application/json",
                            "webhook-id": callback_id,
                            "webhook-timestamp": str(stamp),
                            "webhook-signature": signature,
                        },
                    ).status_code
                except httpx.HTTPError:
                    answer = "unreachable"
                self.sent[f"{kind} {answer}"] += 1
                if answer != 202:
                    # Not recorded (Steward down), or the asset has not stored the
                    # instance yet (404): the decision goes again shortly.
                    with self.lock:
                        self.outbox.append((time.monotonic() + 0.5, instance, decision, kind))
            self.stop.wait(0.05)

    def waiting(self) -> int:
        with self.lock:
            return len(self.outbox)


class WebhookReceiver(StandIn):
    """Verifies each delivery and counts it by `webhook-id`; refuses the first attempt
    of every tenth event, so Steward's retries are part of the drill."""

    def __init__(self, host: str = "127.0.0.1"):
        super().__init__(host)
        self.lock = threading.Lock()
        self.received: Counter = Counter()
        self.refused: set[str] = set()
        self.bad_signatures = 0

    def respond(self, method, path, headers, body):
        from apps.eventing.transports import webhook_signature

        event_id = headers.get("webhook-id", "")
        expected = webhook_signature(
            WEBHOOK_SECRET.encode(), event_id, int(headers.get("webhook-timestamp", 0)), body
        )
        if expected not in headers.get("webhook-signature", "").split():
            with self.lock:
                self.bad_signatures += 1
            return 401, {}
        with self.lock:
            if int(uuid.UUID(event_id)) % 10 == 0 and event_id not in self.refused:
                self.refused.add(event_id)
                return 503, {}
            self.received[event_id] += 1
        return 200, {}


# --------------------------------------------------------------------------- the API


class Api:
    """Steward's API as a careful client uses it: every write carries an
    Idempotency-Key and is retried, with the same key, until Steward answers."""

    def __init__(self, base_url: str, *, deadline: float):
        self.http = httpx.Client(base_url=base_url, timeout=15)
        self.deadline = deadline
        self.retries = 0
        self.calls = 0
        # (when it was answered, seconds it took, retries included), for the soak's p99
        self.latencies: list[tuple[float, float]] = []

    def call(
        self,
        method: str,
        path: str,
        *,
        auth: dict,
        body=None,
        key: str | None = None,
        expect: tuple[int, ...] = (),
    ):
        """Steward's answer, sent again (same Idempotency-Key) while it is a 5xx or none;
        an answer whose status is not in `expect` (when given) stops the drill."""
        headers = dict(auth)
        if key:
            headers["Idempotency-Key"] = key
        began = time.monotonic()
        give_up = began + self.deadline
        while True:
            try:
                response = self.http.request(method, path, json=body, headers=headers)
                if response.status_code < 500:
                    answered = time.monotonic()
                    self.calls += 1
                    self.latencies.append((answered, answered - began))
                    if expect and response.status_code not in expect:
                        raise DrillError(
                            f"{method} {path} answered {response.status_code}: {response.text}"
                        )
                    return response
                problem = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                problem = type(exc).__name__
            self.retries += 1
            if time.monotonic() > give_up:
                raise DrillError(f"{method} {path} kept failing ({problem})")
            time.sleep(0.3)


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def session_auth(session_key: str) -> dict:
    from django.conf import settings

    csrf = uuid.uuid4().hex * 2  # any 64 characters of the right alphabet
    cookies = f"{settings.SESSION_COOKIE_NAME}={session_key}; {settings.CSRF_COOKIE_NAME}={csrf}"
    return {"Cookie": cookies, "X-CSRFToken": csrf}


# --------------------------------------------------------------------------- set-up


def set_up(stores: int) -> dict:
    """Tenants, service accounts, a store catalog and two tenant admins, as an operator
    would have them before the traffic; returns the secrets the traffic uses."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    from apps.core.context import SYSTEM_ACTOR
    from apps.registry.models import Service
    from apps.stores import services as store_services
    from apps.stores.models import Store, StoreProfile
    from apps.tenancy import services
    from apps.tenancy.models import DataClass, Region, Tenant
    from bench.load import _session

    region = Region.objects.get(slug="israelcentral")
    tenants = [
        Tenant.objects.create(slug=f"chaos-{n}", name=f"Chaos {n}", home_region=region)
        for n in range(2)
    ]
    leaving = Tenant.objects.create(slug="chaos-export", name="Chaos export", home_region=region)

    def token(name, scopes, tenant=None):
        account = services.service_account_create(actor=SYSTEM_ACTOR, name=name, tenant=tenant)
        return services.api_token_issue(
            actor=SYSTEM_ACTOR, service_account=account, name="chaos", scopes=scopes
        ).secret

    tenant_tokens = [
        token(f"chaos-app-{n}", ["assets:write", "compute:write"], tenant)
        for n, tenant in enumerate(tenants)
    ]
    platform = token("chaos-platform", ["registry:write", "stores:write"])
    releases = token("chaos-orders", ["registry:write"])
    # A subscription is its consumer's: the receiver's own account registers it.
    receiver = token("chaos-receiver", ["registry:write"])
    owner = Service.objects.get_or_create(name="chaos-knowledge")[0]
    data_class = DataClass.objects.get(slug="operational")
    profile = StoreProfile.objects.create(
        slug="chaos-pg", name="Chaos PostgreSQL", engine="postgresql", shape="dedicated_tables"
    )
    store_slugs = []
    for n in range(stores):
        store = Store.objects.create(
            slug=f"chaos-store-{n}",
            name=f"Chaos store {n}",
            owning_service=owner,
            data_class=data_class,
            category=Store.Category.DERIVED,
            workload_class="catalog",
        )
        store_slugs.append(store.slug)
    store_services.rule_create(actor=SYSTEM_ACTOR, effect="allow", geographies=["IL"])
    # As an operator may in the console: the sweeps behind lost work run every few
    # seconds, so what a killed worker took with it is taken up within the drill.
    every_5s = IntervalSchedule.objects.get_or_create(every=5, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.filter(name__in=RESUMING_SWEEPS).update(interval=every_5s[0])
    admins = []
    for role in ("requester", "approver"):
        user = services.user_create(
            actor=SYSTEM_ACTOR, username=f"chaos-{role}", password=uuid.uuid4().hex
        )
        services.membership_set(actor=SYSTEM_ACTOR, tenant=leaving, user=user, role="admin")
        admins.append(_session(user))
    return {
        "tenants": [t.slug for t in tenants],
        "tenant_tokens": tenant_tokens,
        "platform": platform,
        "releases": releases,
        "receiver": receiver,
        "profile": profile.slug,
        "stores": store_slugs,
        "admins": admins,
    }


# --------------------------------------------------------------------------- traffic


class Traffic:
    """Requests in every domain, round after round, until stopped; what it asked for is
    collected in `expected` for the checks."""

    def __init__(self, api: Api, secrets: dict, expected, workflow: WorkflowService, quick):
        self.api = api
        self.secrets = secrets
        self.expected = expected
        self.workflow = workflow
        self.assets_per_round = 3 if quick else 10
        self.batches_per_round = 2 if quick else 6
        self.release_every = 2  # rounds between two ModelSync releases
        self.interval = 0.0  # the least seconds a round takes (0: as fast as it goes)
        self.stop = threading.Event()
        self.rounds = 0
        self.error: BaseException | None = None
        self.pending_batches: list[tuple[str, dict]] = []
        self.pending_bindings: list[str] = []
        self.free_stores = list(secrets["stores"])
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.export_order()
            while not self.stop.is_set():
                began = time.monotonic()
                self.one_round()
                self.rounds += 1
                self.stop.wait(max(0.0, began + self.interval - time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported by the drill
            self.error = exc

    def one_round(self) -> None:
        n = self.rounds
        for k in range(self.assets_per_round):
            self.asset(n % 2, f"r{n}-a{k}")
        for k in range(self.batches_per_round):
            self.batch(n % 2, f"r{n}-b{k}")
        if self.free_stores:
            self.binding(n % 2, self.free_stores.pop())
        if n % self.release_every == 0:
            self.release(n // self.release_every + 1)
        self.finish_batches()
        self.finish_bindings()

    # -- assets: created, then delegated to the Workflow Service for approval
    def asset(self, t: int, label: str) -> None:
        auth = bearer(self.secrets["tenant_tokens"][t])
        created = self.api.call(
            "POST",
            "/api/v1/assets/assets/",
            auth=auth,
            body={"name": label},
            key=f"a-{label}",
            expect=(201,),
        )
        asset_id = created.json()["id"]
        self.api.call(
            "POST",
            f"/api/v1/assets/assets/{asset_id}/request-approval/",
            auth=auth,
            body={"delegate": True},
            key=f"r-{label}",
            expect=(200,),
        )
        self.expected.assets[asset_id] = ""  # the Workflow Service's decision, filled later

    # -- compute: a workflow step submits a batch; the compute service reports it done
    def batch(self, t: int, label: str) -> None:
        auth = bearer(self.secrets["tenant_tokens"][t])
        body = {
            "idempotency_key": f"step-{label}",
            "workflow_instance_id": f"wf-{label}",
            "workflow_step_id": "train",
        }
        created = self.api.call(
            "POST",
            "/api/v1/compute/batches/",
            auth=auth,
            body=body,
            key=f"b-{label}",
            expect=(200, 201),
        )
        batch_id = created.json()["id"]
        self.expected.batches.add(batch_id)
        self.pending_batches.append((batch_id, auth))

    def finish_batches(self) -> None:
        """The compute service: running, then succeeded. A report whose answer was lost
        is sent again; `409` then means Steward already has it."""
        for batch_id, auth in self.pending_batches:
            url = f"/api/v1/compute/batches/{batch_id}/"
            for status in ("running", "succeeded"):
                body = {"status": status}
                if status == "succeeded":
                    body["result_summary"] = {"rows": 1}
                answer = self.api.call("PATCH", url, auth=auth, body=body)
                if answer.status_code == 409:
                    now = self.api.call("GET", url, auth=auth).json()["status"]
                    if status == "succeeded" and now != "succeeded":
                        raise DrillError(f"batch {batch_id} is {now}, not succeeded")
                elif answer.status_code != 200:
                    raise DrillError(f"reporting a batch answered {answer.status_code}")
        self.pending_batches = []

    # -- stores: provisioning binds a store; a worker provisions it; migrations applied
    def binding(self, t: int, store: str) -> None:
        body = {
            "store": store,
            "tenant": self.secrets["tenants"][t],
            "profile": self.secrets["profile"],
            "region": "israelcentral",
        }
        made = self.api.call(
            "POST",
            "/api/v1/stores/bindings/",
            auth=bearer(self.secrets["platform"]),
            body=body,
            key=f"bind-{store}",
        )
        if made.status_code not in (200, 201) or made.json()["status"] != "requested":
            raise DrillError(f"binding {store} answered {made.status_code}: {made.text}")
        self.expected.bindings.add(made.json()["id"])
        self.pending_bindings.append(made.json()["id"])

    def finish_bindings(self) -> None:
        """The provisioning service: migrations applied once a worker provisioned it;
        those still Requested are looked at again next time."""
        auth = bearer(self.secrets["platform"])
        waiting = []
        for binding_id in self.pending_bindings:
            url = f"/api/v1/stores/bindings/{binding_id}/"
            now = self.api.call("GET", url, auth=auth).json()["status"]
            if now == "requested":
                waiting.append(binding_id)
            elif now == "provisioned":
                answer = self.api.call("POST", f"{url}migrations-applied/", auth=auth)
                if answer.status_code == 409:
                    waiting.append(binding_id)  # the first attempt's answer was lost
                elif answer.status_code != 200:
                    raise DrillError(f"migrations-applied answered {answer.status_code}")
        self.pending_bindings = waiting

    # -- registry: a release pipeline syncs a topic whose schema grows compatibly
    def release(self, version: int) -> None:
        properties = {f"field_{k}": {"type": "string"} for k in range(version)}
        body = {
            "release": f"chaos-orders-{version}",
            "topics": [
                {
                    "name": "chaos.orders",
                    "description": "Orders, as the drill's release pipeline declares them",
                    "producers": ["chaos-orders"],
                    "consumers": ["chaos-billing"],
                    "schema": {
                        "type": "object",
                        "properties": properties,
                        # Closed: a new optional field is then a compatible change.
                        "additionalProperties": False,
                    },
                }
            ],
        }
        answer = self.api.call(
            "POST",
            "/api/v1/registry/model-sync/",
            auth=bearer(self.secrets["releases"]),
            body=body,
            key=f"sync-{version}",
        )
        outcome = answer.json()["topics"][0]["outcome"] if answer.status_code == 200 else None
        if outcome != "published":
            raise DrillError(f"release {version} answered {answer.status_code}: {answer.text}")
        self.expected.schema_versions["chaos.orders"] = version

    # -- governance: a tenant's export, requested by one admin and approved by another
    def export_order(self) -> None:
        requester, approver = (session_auth(s) for s in self.secrets["admins"])
        made = self.api.call(
            "POST",
            "/api/v1/governance/orders/",
            auth=requester,
            body={"kind": "export", "reason": "chaos drill"},
            key="export-order",
            expect=(201,),
        )
        order_id = made.json()["id"]
        self.api.call(
            "POST",
            f"/api/v1/governance/orders/{order_id}/approve/",
            auth=approver,
            body={},
            key="export-approve",
            expect=(200,),
        )
        self.expected.orders.add(order_id)


# --------------------------------------------------------------------------- the drill


def configure(servers: Servers, root: Path, workflow_url: str) -> dict:
    """The environment of every process of the drill, the drill's own included."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": servers.database_url,
        "REDIS_URL": servers.redis_url,
        "STEWARD_DEBUG": "false",
        "STEWARD_LOG_LEVEL": "WARNING",
        "STEWARD_API_RATE": "100000000/min",
        "STEWARD_WORKFLOW_SERVICE_URL": workflow_url,
        "STEWARD_WORKFLOW_CALLBACK_SECRET": CALLBACK_SECRET,
        WEBHOOK_SECRET_VAR: WEBHOOK_SECRET,
        # The drill's webhook receiver listens on loopback, which an operator must allow.
        "STEWARD_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
        "STEWARD_SECRET_BROKER_DIR": str(root / "secrets"),
        # Entries a consumer read but never acknowledged (cut off by a restart) are
        # claimed again after this long; the default minute would only slow the drill.
        "STEWARD_RECLAIM_IDLE_SECONDS": "5",
        "STEWARD_STALLED_WORK_SECONDS": STALLED_WORK_SECONDS,
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)
    return env


def _db(query):
    """A read from the drill's own process, reconnecting after a PostgreSQL restart."""
    from django.db import InterfaceError, OperationalError, connection

    try:
        return query()
    except (OperationalError, InterfaceError):
        connection.close()
        return query()


@dataclass
class Stack:
    """The drill's servers, Steward's processes on them and the stand-ins."""

    root: Path
    servers: Servers
    processes: Processes
    workflow: WorkflowService
    receiver: WebhookReceiver
    port: int
    started: float


@contextlib.contextmanager
def drill_stack():
    """Servers and stand-ins of their own, gone at the end (STEWARD_CHAOS_KEEP=1 keeps
    the directory, logs included)."""
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="steward-chaos-"))
    servers = Servers(root)
    rng = random.Random(9)  # noqa: S311 - a reproducible drill, not a secret
    processes = None
    stand_ins: list[StandIn] = []
    try:
        servers.start_postgres()
        servers.start_redis()
        port = free_port()
        workflow = WorkflowService(f"http://127.0.0.1:{port}", rng)
        receiver = WebhookReceiver()
        stand_ins += [workflow, receiver]
        env = configure(servers, root, workflow.url)
        processes = Processes(env, servers.logs)
        yield Stack(root, servers, processes, workflow, receiver, port, started)
    finally:
        for stand_in in stand_ins:
            if isinstance(stand_in, WorkflowService):
                stand_in.stop.set()
            stand_in.close()
        if processes is not None:
            processes.stop()
        servers.stop()
        if os.environ.get("STEWARD_CHAOS_KEEP") != "1":
            remove(root)
        else:
            say(f"kept {root}")


def run(*, quick: bool) -> dict:
    with drill_stack() as stack:
        return _drill(stack, quick)


def _manage(env: dict, *args: str) -> None:
    done = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", *args],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise DrillError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def bring_up(stack: Stack, *, quick: bool, web_workers: int, start_processes=None, setup_env=None):
    """Migrate, set up, start every process and the webhook subscriptions; (api,
    secrets, expected) once two workers answer. `start_processes()` starts Steward's
    processes and returns the Api once it is served (default: one host's, as deployed
    on one machine); `setup_env` is the environment migrations run in."""
    processes, receiver, port, started = stack.processes, stack.receiver, stack.port, stack.started
    env = processes.env
    _manage(setup_env or env, "migrate", "--no-input")
    _manage(setup_env or env, "steward_setup")
    import django

    django.setup()
    from bench.chaos_verify import Expected, install_emitted_log
    from portal.celery import app

    install_emitted_log()
    secrets = set_up(stores=4 if quick else 10)
    say(f"stack set up in {time.monotonic() - started:.0f} s; starting processes")

    if start_processes is None:

        def start_processes() -> Api:
            processes.web(port, workers=web_workers)
            processes.worker("worker-1")
            processes.worker("worker-2")
            processes.beat()
            processes.consumers()
            return Api(f"http://127.0.0.1:{port}", deadline=120)

    api = start_processes()
    wait_until(lambda: _get_ok(api, "/healthz"), timeout=60, what="gunicorn serving", interval=0.2)
    expected = Expected(webhook_topics=WEBHOOK_TOPICS)
    receiving = bearer(secrets["receiver"])
    api.call(
        "POST",
        "/api/v1/registry/services/",
        auth=receiving,
        body={"name": "chaos-receiver"},
        expect=(201,),
    )
    for topic in WEBHOOK_TOPICS:
        made = api.call(
            "POST",
            "/api/v1/registry/subscriptions/",
            auth=receiving,
            body={
                "consumer": "chaos-receiver",
                "topic": topic,
                "transport": "webhook",
                "endpoint": receiver.url + "/events",
                "secret_ref": f"env:{WEBHOOK_SECRET_VAR}",
            },
            expect=(201,),
        )
        expected.webhook_subscription = made.json()["id"]
    wait_until(
        lambda: len(app.control.ping(timeout=0.5)) >= 2,
        timeout=90,
        what="two Celery workers answering",
    )
    return api, secrets, expected


def _drill(stack: Stack, quick: bool, *, name: str = "chaos", plan=None, bring=None) -> dict:
    """The drill on `stack`: `bring(stack)` brings it up (default `bring_up`), `plan`
    is its faults (default `fault_plan`); the summary is named `name`."""
    servers, processes, workflow, receiver, port, started = (
        stack.servers,
        stack.processes,
        stack.workflow,
        stack.receiver,
        stack.port,
        stack.started,
    )
    if bring is None:
        api, secrets, expected = bring_up(stack, quick=quick, web_workers=2 if quick else 4)
    else:
        api, secrets, expected = bring(stack)
    from bench.chaos_verify import verify

    faults: list[dict] = []
    traffic = Traffic(api, secrets, expected, workflow, quick)
    traffic_started = time.monotonic()
    say(f"processes up in {traffic_started - started:.0f} s; traffic and faults")
    traffic.thread.start()

    def after_rounds(n: int) -> None:
        wait_until(
            lambda: traffic.rounds >= n or traffic.error or not traffic.thread.is_alive(),
            timeout=300,
            what=f"{n} rounds of traffic",
        )
        if traffic.error:
            raise traffic.error

    def fault(names: tuple[str, ...], action) -> None:
        began, at_round = time.monotonic(), traffic.rounds
        action()
        for name in names:
            faults.append(
                {"fault": name, "at_round": at_round, "seconds": round(time.monotonic() - began, 1)}
            )
        say(f"{' + '.join(names)} (round {at_round})")

    plan = fault_plan(servers, processes, port, quick) if plan is None else plan
    last_fault = time.monotonic()
    for n, (names, action) in enumerate(plan, start=1):
        # The first fault after a little more traffic; each later one in the middle of
        # the next rounds' requests, batches and deliveries.
        after_rounds(FIRST_FAULT_ROUNDS[quick] + (n - 1) * SPACING[quick])
        fault(names, action)
        last_fault = time.monotonic()
    after_rounds(traffic.rounds + SPACING[quick])
    traffic.stop.set()
    traffic.thread.join(timeout=300)
    if traffic.error:
        raise traffic.error
    traffic_seconds = time.monotonic() - traffic_started
    say(f"traffic stopped after {traffic.rounds} rounds; waiting for the stack to settle")

    settle_started = time.monotonic()
    deadline = last_fault + SETTLE_BOUND_SECONDS
    while True:
        # Snapshots: the stand-ins' threads go on writing while the checks read.
        with workflow.lock:
            decided = {a: d for a, (_, d) in workflow.decisions.items() if a in expected.assets}
        expected.assets.update(decided)
        with receiver.lock:
            expected.webhook_received = Counter(receiver.received)
        summary = _db(lambda: verify(expected))
        if summary["ok"] and not workflow.waiting():
            break
        if time.monotonic() > deadline or processes.exited():
            break
        if traffic.pending_bindings:
            traffic.finish_bindings()
        time.sleep(1)
    settled = time.monotonic()
    settle_seconds = settled - settle_started
    exited = processes.exited()
    if exited:
        summary["ok"] = False
        summary["exited"] = {name: processes.tail(name) for name in exited}
    summary["settle"] = settle_verdict(summary["ok"], settled - last_fault)
    summary["redrive"] = redrives(servers.logs)
    summary["jobs_still_claimed"] = _db(claimed_jobs)
    summary["ok"] = summary["ok"] and summary["settle"]["within_bound"]
    return {
        "name": name,
        "quick": quick,
        **summary,
        "faults": faults,
        "traffic": {
            "rounds": traffic.rounds,
            "assets": len(expected.assets),
            "batches": len(expected.batches),
            "bindings": len(expected.bindings),
            "schema_versions": sum(expected.schema_versions.values()),
            "orders": len(expected.orders),
            "api_retries": api.retries,
            "callbacks_sent": dict(sorted(workflow.sent.items())),
            "webhook_refused_once": len(receiver.refused),
            "webhook_bad_signatures": receiver.bad_signatures,
        },
        "seconds": {
            "set_up": round(traffic_started - started, 1),
            "traffic": round(traffic_seconds, 1),
            "settle": round(settle_seconds, 1),
            "total": round(time.monotonic() - started, 1),
        },
    }


REDRIVEN = re.compile(r"Redis had lost entries of lanes .*?: (\d+) envelopes")


def redrives(logs: Path) -> dict:
    """The re-drives Steward's processes logged (apps.eventing.redrive), and how many
    envelopes they published again."""
    counts = [
        int(match.group(1))
        for path in sorted(logs.glob("*.log"))
        for match in REDRIVEN.finditer(path.read_text(errors="replace"))
    ]
    return {"runs": len(counts), "envelopes": sum(counts)}


def claimed_jobs() -> dict[str, str]:
    """Periodic jobs whose claim (apps.core.jobs) is still held at the end: a run that
    died holding it skips the job until the claim goes stale."""
    from apps.core.models import ScheduledJob

    return {
        name: since.isoformat()
        for name, since in ScheduledJob.objects.filter(running_since__isnull=False)
        .order_by("name")
        .values_list("name", "running_since")
    }


def settle_verdict(consistent: bool, after_last_fault: float) -> dict:
    """Whether the stack was consistent again within SETTLE_BOUND_SECONDS of the last
    fault (a state still inconsistent at the bound is not settled)."""
    return {
        "bound_seconds": SETTLE_BOUND_SECONDS,
        "after_last_fault_seconds": round(after_last_fault, 1),
        "within_bound": consistent and after_last_fault <= SETTLE_BOUND_SECONDS,
    }


def fault_plan(servers: Servers, processes: Processes, port: int, quick: bool) -> list:
    """(names, action) of each fault, in order. The quick drill keeps the harsh ones
    (crashes, kills, the pause, the lost data) and kills the processes in one step."""
    web_workers = 2 if quick else 4

    def kill(*names: str):
        def action():
            for name in names:
                processes.kill(name)
            for name in names:  # as a supervisor would, once it notices
                if name == "web":
                    processes.web(port, workers=web_workers)
                elif name == "beat":
                    processes.beat()
                elif name == "consumers":
                    processes.consumers()
                else:
                    processes.worker(REPLACEMENTS[name])

        return tuple(f"SIGKILL {name}" for name in names), action

    def pause():
        servers.pause_redis(REDIS_PAUSE_SECONDS)

    harsh = [
        (("crash PostgreSQL",), servers.crash_postgres),
        (("SIGKILL Redis",), servers.kill_redis),
        ((f"pause Redis {REDIS_PAUSE_SECONDS:.0f} s",), pause),
    ]
    lose = (("lose Redis data",), lambda: servers.kill_redis(lose_data=True))
    if quick:
        return [
            kill("worker-1"),
            *harsh,
            kill("web", "beat", "consumers", "worker-2"),
            lose,
        ]
    return [
        kill("worker-1"),
        (("restart Redis",), servers.restart_redis),
        (("restart PostgreSQL",), servers.restart_postgres),
        *harsh,
        kill("web"),
        kill("beat"),
        kill("consumers"),
        kill("worker-2"),
        (("FLUSHALL Redis",), servers.flush_redis),
        lose,
    ]


def _get_ok(api: Api, path: str) -> bool:
    try:
        return api.http.get(path).status_code == 200
    except httpx.HTTPError:
        return False


def main(argv: list[str]) -> int:
    """`python -m bench chaos [--quick]`: 0 when nothing was lost or doubled, 1 when
    something was, 2 when the drill itself could not run."""
    quick = "--quick" in argv
    try:
        summary = run(quick=quick)
    except DrillError as exc:
        print(json.dumps({"name": "chaos", "ok": False, "error": str(exc)}))
        return 2
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1
