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
- register_new_subject_ms / register_new_version_ms: medians of one registration as the
  Schema Registry API makes it (the service call, without HTTP), of a first version on
  a new topic and of a compatible new version of an existing one. Not yet through
  gunicorn, and no SQL baseline (issue #18 asks for both).
- avro_median_check_ms: one FULL check of a 50-field Avro record with nested types
  against its previous version (apps.registry.avro.bench_check_ms).
"""

from __future__ import annotations

import json
import random
import statistics
import time

from apps.core.context import SYSTEM_ACTOR
from apps.registry import avro, compatibility, schemas
from apps.registry.models import Service

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
        compatibility.check(new, [old], mode="FULL")
    timings = []
    for old, new in pairs:
        started = time.perf_counter()
        verdict = compatibility.check(new, [old], mode="FULL")
        timings.append((time.perf_counter() - started) * 1000)
        assert verdict.compatible, verdict.breaking
    timings.sort()

    corpus = [_history(_object(rng, rng.randint(20, 200)), 11) for _ in range(20 if quick else 100)]
    checks_per_s = _rate(
        lambda h: compatibility.check(h[-1], h[:-1], mode="FULL_TRANSITIVE"), corpus
    )
    baseline_per_s = _rate(
        lambda h: [(_walk(old, h[-1]), _walk(h[-1], old)) for old in h[:-1]], corpus
    )

    producer = Service.objects.create(name="bench-producer")
    topic_schemas = [_object(rng, 30) for _ in range(200)]

    def sync(release: str, versions: list[dict]) -> float:
        topics = [
            {"name": f"bench.topic_{n}", "consumers": ["bench-consumer"], "schema": schema}
            for n, schema in enumerate(versions)
        ]
        started = time.perf_counter()
        answer = schemas.model_sync(
            actor=SYSTEM_ACTOR, service=producer, release=release, topics=topics
        )
        elapsed = time.perf_counter() - started
        assert all(t["outcome"] == "published" for t in answer["topics"]), answer["topics"][:3]
        return elapsed

    first = sync("r1", topic_schemas)
    second = sync("r2", [_evolve(schema, 0) for schema in topic_schemas])

    def register(name: str, schema: dict) -> float:
        # as the Schema Registry API registers (apps.registry.confluent), without HTTP
        started = time.perf_counter()
        answer = schemas.model_sync(
            actor=SYSTEM_ACTOR,
            service=producer,
            release=f"bench-register:{name}",
            topics=[{"name": name, "producers": [], "schema": schema}],
            remember=False,
        )
        elapsed = (time.perf_counter() - started) * 1000
        assert answer["topics"][0]["outcome"] == "published", answer["topics"][0]
        return elapsed

    registrations = 10 if quick else 40
    new_subject = [register(f"bench.new_{n}", topic_schemas[n]) for n in range(registrations)]
    new_version = [
        register(f"bench.new_{n}", _evolve(topic_schemas[n], 0)) for n in range(registrations)
    ]
    return {
        "name": "registry",
        "median_check_ms": round(statistics.median(timings), 3),
        "p99_check_ms": round(timings[int(len(timings) * 0.99) - 1], 3),
        "checks_per_s": round(checks_per_s, 1),
        "baseline_checks_per_s": round(baseline_per_s, 1),
        "ratio": round(checks_per_s / baseline_per_s, 3),
        "sync_200_topics_s": round(second, 3),
        "sync_200_topics_first_s": round(first, 3),
        "register_new_subject_ms": round(statistics.median(new_subject), 3),
        "register_new_version_ms": round(statistics.median(new_version), 3),
        "avro_median_check_ms": round(avro.bench_check_ms(pairs=60 if quick else 300), 3),
    }
