"""`registry`: compatibility checks over realistic schemas, and a 200-topic ModelSync.

- median_check_ms / p99_check_ms: one FULL check (both directions) of a schema of 50
  properties in all (nested objects' included; arrays, enums, `oneOf`) against its
  previous version (a compatible evolution), over many pairs.
- checks_per_s: FULL_TRANSITIVE checks of a new version against its 10 earlier
  versions, over a corpus of schemas of 20-200 properties with nested objects,
  arrays, enums and combinators.
- baseline_checks_per_s: the same comparisons done as a plain walk of both trees
  (every node of both schemas visited in step, values compared, nothing explained):
  the floor of any diff; ratio = checks_per_s / baseline_checks_per_s.
- sync_200_topics_s: a ModelSync of 200 topics each bringing a new compatible
  version (after a first sync that created them), through the service, in the
  scratch database. sync_200_topics_first_s is the first one.
- register_new_subject_ms / register_new_version_ms: medians of one registration through
  the Schema Registry API over HTTP, as deployed (gunicorn with gunicorn.conf.py, the
  scratch database), one client at a time, after both kinds have warmed every worker: a
  first version on a new subject (`POST /api/schema-registry/subjects/<topic>-value/
  versions`, the topic made by it) and a compatible new version of an existing one,
  measured in turn (20 of each with --quick, 40 without), each a schema the registry
  has not seen. `baseline_register_new_subject_ms`
  / `baseline_register_new_version_ms`: the rows the same registrations write (the
  topic and its producer, the version, its event and its audit entry) inserted
  directly with psycopg, one transaction each; `register_ratio` is the new subject's
  figure over its baseline.
- register_service_new_subject_ms / register_service_new_version_ms: the same
  registrations through the service alone (no HTTP), to tell the two costs apart.
- avro_median_check_ms: one FULL check of a 50-field Avro record with nested types
  against its previous version (bench_check_ms below).
- protobuf_median_check_ms: one FULL check of a 50-field Protobuf message (scalars of
  every group, repeated fields, a map, a oneof, an enum and a nested message) against its
  previous version, a compatible evolution, both parsed before the clock starts, the old
  one given as its stored document, as the gate gives it (bench_protobuf_check_ms below).
  `protobuf_baseline_median_ms`: the floor of any diff, both messages' fields matched by
  number and their types and names compared, nothing explained; `protobuf_ratio` is the
  check over that floor.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg

from apps.core.context import SYSTEM_ACTOR
from apps.registry import formats, versions
from apps.registry.formats import avro, json_schema, protobuf
from apps.registry.models import Service
from apps.tenancy import services as tenancy
from bench.harness import database_url, dsn

ROOT = Path(__file__).resolve().parents[1]

KINDS = ("string", "integer", "number", "boolean", "enum", "array", "object", "oneOf")


def _leaf(rng: random.Random, depth: int) -> dict:
    kind = rng.choice(KINDS if depth < 2 else KINDS[:5])
    if kind == "enum":
        return {"type": "string", "enum": [f"v{n}" for n in range(rng.randint(2, 6))]}
    if kind == "array":
        return {"type": "array", "items": _leaf(rng, depth + 1), "maxItems": 100}
    if kind == "object":
        return _object(rng, rng.randint(3, 8), depth + 1)
    if kind == "oneOf":
        return {"oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}
    extra = {"maxLength": 200} if kind == "string" else {}
    return {"type": kind, "description": f"a {kind}", **extra}


def _object(rng: random.Random, properties: int, depth: int = 0) -> dict:
    props = {f"field_{depth}_{n}": _leaf(rng, depth) for n in range(properties)}
    return {
        "type": "object",
        "properties": props,
        "required": sorted(rng.sample(sorted(props), k=max(1, properties // 4))),
    }


def _sized(rng: random.Random, total: int, depth: int = 0) -> dict:
    """An object schema with exactly `total` properties, nested ones included."""
    props: dict = {}
    left = total
    while left > 0:
        name = f"field_{depth}_{len(props)}"
        left -= 1
        if depth < 2 and left >= 3 and rng.random() < 0.15:
            inner = min(rng.randint(3, 8), left)
            props[name] = _sized(rng, inner, depth + 1)
            left -= inner
        else:
            props[name] = _leaf(rng, 2)  # no further nesting: the budget decides that
    return {
        "type": "object",
        "properties": props,
        "required": sorted(rng.sample(sorted(props), k=max(1, len(props) // 4))),
    }


def _evolve(schema: dict, step: int) -> dict:
    """A compatible next version in FULL mode: a description changes, and a property
    with an empty schema is added to the open model."""
    props = dict(schema["properties"])
    props[f"added_{step}"] = {}
    return {**schema, "properties": props, "description": f"version {step + 1}"}


def _history(schema: dict, versions: int) -> list[dict]:
    """Each version a separate document, as each would be parsed from a release: no
    sub-schema is shared between versions (the checker may not short-cut on identity)."""
    out = [schema]
    for step in range(versions - 1):
        out.append(json.loads(json.dumps(_evolve(out[-1], step))))
    return out


def _walk(a, b) -> None:
    """Visit both trees in step (the baseline)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            _walk(a.get(key), b.get(key))
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(a, b, strict=False):
            _walk(x, y)
    else:
        _ = a == b


def _rate(work, items) -> float:
    started = time.perf_counter()
    for item in items:
        work(item)
    return len(items) / (time.perf_counter() - started)


def run(*, quick: bool) -> dict:
    rng = random.Random(7)  # noqa: S311 - a reproducible corpus, not a secret
    pairs = [_history(_sized(rng, 50), 2) for _ in range(50 if quick else 300)]
    for old, new in pairs[:10]:  # warm-up
        json_schema.check(new, [old], mode="FULL")
    timings = []
    for old, new in pairs:
        started = time.perf_counter()
        verdict = json_schema.check(new, [old], mode="FULL")
        timings.append((time.perf_counter() - started) * 1000)
        assert verdict.compatible, verdict.breaking
    timings.sort()

    corpus = [_history(_object(rng, rng.randint(20, 200)), 11) for _ in range(20 if quick else 100)]
    checks_per_s = _rate(lambda h: json_schema.check(h[-1], h[:-1], mode="FULL_TRANSITIVE"), corpus)
    baseline_per_s = _rate(
        lambda h: [(_walk(old, h[-1]), _walk(h[-1], old)) for old in h[:-1]], corpus
    )

    producer = Service.objects.create(name="bench-producer")
    topic_schemas = [_object(rng, 30) for _ in range(200)]

    def sync(release: str, schemas: list[dict]) -> float:
        topics = [
            {"name": f"bench.topic_{n}", "consumers": ["bench-consumer"], "schema": schema}
            for n, schema in enumerate(schemas)
        ]
        started = time.perf_counter()
        answer = versions.model_sync(
            actor=SYSTEM_ACTOR, service=producer, release=release, topics=topics
        )
        elapsed = time.perf_counter() - started
        assert all(t["outcome"] == "published" for t in answer["topics"]), answer["topics"][:3]
        return elapsed

    first = sync("r1", topic_schemas)
    second = sync("r2", [_evolve(schema, 0) for schema in topic_schemas])

    def register(name: str, schema: dict) -> float:
        # as the Schema Registry API registers (apps.registry.confluent), without HTTP:
        # the schema parsed, then the one subject decided
        started = time.perf_counter()
        parsed = formats.parse("JSON", json.dumps(schema))
        answer = versions.schema_register(
            actor=SYSTEM_ACTOR,
            service=producer,
            topic_name=name,
            role="value",
            parsed=parsed,
            release=f"bench-register:{name}:{parsed.fingerprint}",
        )
        elapsed = (time.perf_counter() - started) * 1000
        assert answer.outcome == "published", answer.as_dict()
        return elapsed

    registrations = 20 if quick else 40
    new_subject, new_version = _alternating(
        lambda n: register(f"bench.new_{n}", topic_schemas[n]),
        lambda n: register(f"bench.new_{n}", _evolve(topic_schemas[n], 0)),
        registrations,
    )
    http_new_subject, http_new_version = _through_http(topic_schemas, registrations)
    sql_new_subject, sql_new_version = _by_hand(topic_schemas, registrations, producer)
    return {
        "name": "registry",
        "median_check_ms": round(statistics.median(timings), 3),
        "p99_check_ms": round(timings[int(len(timings) * 0.99) - 1], 3),
        "checks_per_s": round(checks_per_s, 1),
        "baseline_checks_per_s": round(baseline_per_s, 1),
        "ratio": round(checks_per_s / baseline_per_s, 3),
        "sync_200_topics_s": round(second, 3),
        "sync_200_topics_first_s": round(first, 3),
        "register_new_subject_ms": round(statistics.median(http_new_subject), 3),
        "register_new_version_ms": round(statistics.median(http_new_version), 3),
        "baseline_register_new_subject_ms": round(statistics.median(sql_new_subject), 3),
        "baseline_register_new_version_ms": round(statistics.median(sql_new_version), 3),
        "register_ratio": round(
            statistics.median(http_new_subject) / statistics.median(sql_new_subject), 2
        ),
        "register_service_new_subject_ms": round(statistics.median(new_subject), 3),
        "register_service_new_version_ms": round(statistics.median(new_version), 3),
        "avro_median_check_ms": round(bench_check_ms(pairs=60 if quick else 300), 3),
        **bench_protobuf_check_ms(pairs=60 if quick else 300),
    }


def _alternating(first, second, n: int) -> tuple[list[float], list[float]]:
    """`first(k)` then `second(k)` for each k: the two kinds measured in turn, so that
    neither has the machine's quieter or busier moments to itself."""
    firsts, seconds = [], []
    for k in range(n):
        firsts.append(first(k))
        seconds.append(second(k))
    return firsts, seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _through_http(topic_schemas: list[dict], n: int) -> tuple[list[float], list[float]]:
    """Milliseconds of each registration through gunicorn: first versions on new
    subjects, then a compatible new version of each."""
    account = tenancy.service_account_create(actor=SYSTEM_ACTOR, name="bench-http-orders")
    issued = tenancy.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="bench", scopes=["registry:write"]
    )
    basic = base64.b64encode(f"{account.name}:{issued.secret}".encode()).decode()
    headers = {
        "Authorization": f"Basic {basic}",
        "Content-Type": "application/vnd.schemaregistry.v1+json",
    }
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "STEWARD_LOG_LEVEL": "WARNING"}
    env.setdefault("STEWARD_API_RATE", "100000000/min")
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    server = subprocess.Popen(  # noqa: S603
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    conn = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/healthz")
                if conn.getresponse().read() and time.monotonic() < deadline:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        prefix = f"bench.http_{uuid.uuid4().hex[:6]}"

        def register(subject: str, schema: dict) -> float:
            body = json.dumps({"schema": json.dumps(schema), "schemaType": "JSON"})
            started = time.perf_counter()
            conn.request("POST", f"/api/schema-registry/subjects/{subject}/versions", body, headers)
            answer = conn.getresponse()
            payload = answer.read()
            elapsed = (time.perf_counter() - started) * 1000
            assert answer.status == 200, payload[:300]
            return elapsed

        # Warm every worker's code paths of both kinds (gunicorn's sync workers take a
        # new connection each request, so the four share them) before measuring.
        for k in range(12):
            register(f"{prefix}_warm{k}-value", topic_schemas[k])
            register(f"{prefix}_warm{k}-value", _evolve(topic_schemas[k], 0))
        subjects = [f"{prefix}_{k}-value" for k in range(n)]
        # schemas the registry has not seen (a title of their own), as a new subject's
        # and a new version's usually are: each gets an id of its own
        fresh = [{**topic_schemas[k], "title": subjects[k]} for k in range(n)]
        return _alternating(
            lambda k: register(subjects[k], fresh[k]),
            lambda k: register(subjects[k], _evolve(fresh[k], 0)),
            n,
        )
    finally:
        if conn is not None:
            conn.close()
        server.terminate()
        server.wait(timeout=30)


def _by_hand(topic_schemas: list[dict], n: int, producer) -> tuple[list[float], list[float]]:
    """The rows a registration writes, inserted directly: the topic and its producer,
    the version, its event and its audit entry, one transaction each."""
    fingerprint = "0" * 64
    new_subject, new_version = [], []
    with psycopg.connect(dsn()) as conn:
        conn.execute("SELECT set_config('steward.system', 'on', false)")

        def version(topic_id: int, number: int, schema: dict) -> None:
            text = json.dumps(schema)
            identity = conn.execute(
                "INSERT INTO registry_schemaidentity (key, schema_type, reusable, created_at)"
                " VALUES (%s, 'JSON', true, now()) RETURNING id",
                [uuid.uuid4().hex],
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO registry_schemaversion (topic_id, role, version, schema_type,"
                " identity_id, schema, canonical, text, fingerprint, state, verdict, release,"
                " override_reason, created_at, published_at)"
                " VALUES (%s, 'value', %s, 'JSON', %s, %s, %s, %s, %s, 'published', '{}', '',"
                " '', now(), now())",
                [topic_id, number, identity, text, text, text, fingerprint],
            )
            conn.execute(
                "INSERT INTO eventing_outboxevent (event_id, topic, event_type, schema_version,"
                " aggregate_type, aggregate_id, lane, occurred_at, correlation_id,"
                " causation_id, payload) VALUES (%s, 'registry.schema',"
                " 'SchemaVersionPublished', 1, 'registry.topic', %s, 0, now(), '', '', '{}')",
                [uuid.uuid4(), str(topic_id)],
            )
            conn.execute(
                "INSERT INTO tenancy_auditevent (occurred_at, actor_label, action,"
                " object_type, object_id, object_repr, changes, request_id)"
                " VALUES (now(), 'bench', 'schema_version.publish', 'registry.schemaversion',"
                " %s, '', '{}', '')",
                [str(topic_id)],
            )

        topics = []
        for k in range(n):
            started = time.perf_counter()
            with conn.transaction():
                topic_id = conn.execute(
                    "INSERT INTO registry_topic (name, description, current_schema_version,"
                    " compatibility_mode, subject_modes, subject_levels, subject_contracts,"
                    " compatibility_policy, created_at, updated_at)"
                    " VALUES (%s, '', 1, 'BACKWARD', '{}', '{}', '{}', 'STRICT', now(), now())"
                    " RETURNING id",
                    [f"bench.sql_{uuid.uuid4().hex[:8]}_{k}"],
                ).fetchone()[0]
                conn.execute(
                    "INSERT INTO registry_topic_producers (topic_id, service_id) VALUES (%s, %s)",
                    [topic_id, producer.pk],
                )
                version(topic_id, 1, topic_schemas[k])
            new_subject.append((time.perf_counter() - started) * 1000)
            topics.append(topic_id)
        for k, topic_id in enumerate(topics):
            started = time.perf_counter()
            with conn.transaction():
                version(topic_id, 2, _evolve(topic_schemas[k], 0))
                conn.execute(
                    "UPDATE registry_topic SET current_schema_version = 2, updated_at = now()"
                    " WHERE id = %s",
                    [topic_id],
                )
            new_version.append((time.perf_counter() - started) * 1000)
    return new_subject, new_version


# --------------------------------------------------------------------------- Avro checks


def _avro_type(rng: random.Random, depth: int, counter: list) -> object:
    """A field type: a primitive, a logical type, an enum, a fixed, a nullable union, an
    array, a map, or (near the top) a nested record, each named type uniquely."""
    counter[0] += 1
    n = counter[0]
    roll = rng.random()
    if depth < 2 and roll < 0.08:
        return {"type": "array", "items": _avro_type(rng, depth + 1, counter)}
    if depth < 2 and roll < 0.14:
        return {"type": "map", "values": _avro_type(rng, depth + 1, counter)}
    if roll < 0.24:
        return ["null", rng.choice(["string", "long", "double"])]
    if roll < 0.32:
        return {"type": "enum", "name": f"E{n}", "symbols": [f"S{k}" for k in range(4)]}
    if roll < 0.36:
        return {"type": "fixed", "name": f"F{n}", "size": 16}
    if roll < 0.44:
        return {"type": "long", "logicalType": "timestamp-millis"}
    return rng.choice(["string", "int", "long", "double", "boolean", "bytes"])


def _avro_record(rng: random.Random, total: int, depth: int, counter: list, name: str):
    """A record with exactly `total` fields, its nested records' included."""
    fields = []
    left = total
    while left > 0:
        left -= 1
        field = {"name": f"f{depth}_{len(fields)}"}
        if depth < 2 and left >= 3 and rng.random() < 0.15:
            inner = min(rng.randint(3, 8), left)
            left -= inner
            counter[0] += 1
            field["type"] = _avro_record(rng, inner, depth + 1, counter, f"R{counter[0]}")
        else:
            field["type"] = _avro_type(rng, 2 if depth else 0, counter)
        fields.append(field)
    return {"type": "record", "name": name, "namespace": "bench.avro", "fields": fields}


def _avro_evolve(schema: dict, step: int) -> dict:
    """A next version compatible in FULL mode: the doc changes and a nullable field with a
    null default is added."""
    nxt = json.loads(json.dumps(schema))
    nxt["doc"] = f"version {step + 2}"
    nxt["fields"].append({"name": f"added_{step}", "type": ["null", "string"], "default": None})
    return nxt


def bench_check_ms(
    *, pairs: int = 300, mode: str = "FULL", parse_new: bool = False, seed: int = 7
) -> float:
    """Median milliseconds of one check() of a 50-field record with nested types (records,
    arrays, maps, enums, fixed, unions, logical types) against its previous version, a
    compatible evolution, over `pairs` distinct pairs.

    Both versions are parsed before the clock starts (the registry keeps published
    versions parsed, and parses a new schema once for all its checks), each from its own
    text, so that no type is shared between the two; with `parse_new` the clock also runs
    while the new version is parsed from its text. The parser's cache is left alone.
    """
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus, not a secret
    corpus = []
    for n in range(pairs):
        old = _avro_record(rng, 50, 0, [0], f"Event{n}")
        new = json.dumps(_avro_evolve(old, 0))
        corpus.append((_parsed(json.dumps(old)), new))
    for old, new in corpus[:20]:  # warm-up
        avro.check(_parsed(new), [old], mode=mode)
    timings = []
    for old, text in corpus:
        new = None if parse_new else _parsed(text)
        started = time.perf_counter()
        if parse_new:
            new = _parsed(text)
        verdict = avro.check(new, [old], mode=mode)
        timings.append((time.perf_counter() - started) * 1000)
        if not verdict.compatible:
            raise AssertionError(verdict.as_dict())
    return statistics.median(timings)


def _parsed(text: str):
    """An Avro schema parsed from its own text, past the parser's cache (which keeps
    schemas given as text, never decoded JSON)."""
    return avro.parse_schema(json.loads(text))


_PROTO_SCALARS = (
    "int32",
    "int64",
    "uint64",
    "bool",
    "sint64",
    "string",
    "bytes",
    "fixed32",
    "sfixed64",
    "float",
    "double",
)


def _proto_message(rng: random.Random, n: int, added: int = 0) -> str:
    """A 50-field proto3 message (a nested message's and the oneof's fields counted),
    `added` more fields at the end: each added field is a compatible evolution."""
    fields = []
    for number in range(1, 40):
        label = "repeated " if rng.random() < 0.2 else ""
        fields.append(f"  {label}{rng.choice(_PROTO_SCALARS)} f{number} = {number};")
    fields.append("  map<string, int64> counts = 40;")
    fields.append("  Kind kind = 41;")
    fields.append("  Line line = 42;")
    fields.append("  oneof payment {\n    string card = 43;\n    string iban = 44;\n  }")
    fields.extend(f"  string added{k} = {100 + k};" for k in range(added))
    return (
        f'syntax = "proto3";\npackage bench.proto{n};\n\nmessage Event {{\n'
        + "\n".join(fields)
        + "\n  enum Kind {\n    A = 0;\n    B = 1;\n  }\n"
        + "  message Line {\n"
        + "\n".join(f"    int64 l{k} = {k};" for k in range(1, 7))
        + "\n  }\n}\n"
    )


def _proto_walk(old, new) -> None:
    """The baseline: both messages' fields matched by number, type and name compared."""
    for a, b in ((old, new), (new, old)):
        by_number = {f.number: f for f in b.field}
        for field in a.field:
            other = by_number.get(field.number)
            _ = other is not None and (other.type, other.name) == (field.type, field.name)
        for nested in a.nested_type:
            _ = [f.number for f in nested.field]


def bench_protobuf_check_ms(*, pairs: int = 300, seed: int = 11) -> dict:
    """Median milliseconds of one FULL check of a 50-field message against its previous
    version over `pairs` distinct pairs, and of the baseline walk of the same pairs."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus, not a secret
    corpus = []
    for n in range(pairs):
        state = rng.getstate()
        old_text = _proto_message(rng, n)
        rng.setstate(state)
        new = protobuf.parse_schema(_proto_message(rng, n, added=1))
        stored = protobuf.parse_schema(old_text).document
        protobuf.parse_schema(stored)  # kept parsed by the cache the gate's checks read
        corpus.append((stored, new))
    for old, new in corpus[:20]:  # warm-up
        protobuf.check(new, [old], mode="FULL")
    timings, baseline = [], []
    for old, new in corpus:
        started = time.perf_counter()
        verdict = protobuf.check(new, [old], mode="FULL")
        timings.append((time.perf_counter() - started) * 1000)
        if not verdict.compatible:
            raise AssertionError(verdict.as_dict())
        old_message = protobuf.parse_schema(old).types.main.message_type[0]
        new_message = new.types.main.message_type[0]
        started = time.perf_counter()
        _proto_walk(old_message, new_message)
        baseline.append((time.perf_counter() - started) * 1000)
    median, floor = statistics.median(timings), statistics.median(baseline)
    return {
        "protobuf_median_check_ms": round(median, 3),
        "protobuf_baseline_median_ms": round(floor, 4),
        "protobuf_ratio": round(median / floor, 1),
    }
