"""JSON Schema verdicts stated case by case as the reference registry gives them.

Each row is a change from the reference registry's own JSON Schema compatibility suite
(Confluent Schema Registry's SchemaDiff examples, Draft 7 and 2020-12), restated here: the
old schema, the new one, and whether BACKWARD accepts the new one under STRICT and under
LENIENT. A row runs once per dialect the reference's suite runs it in: without `$schema`
(read as Draft 7) and under 2020-12, where tuple `items` are `prefixItems` and
`additionalItems` is `items`.

LENIENT is STRICT plus the differences registry-compatibility.md adds for it; a
sub-schema's own differences are never hidden by the verdict on the property or item that
holds it, so a property the partially open model does not cover still breaks LENIENT when
its schema changed type.
"""

import json

import pytest
from confluent_kafka.schema_registry import Schema
from rest_framework.test import APIClient

from apps.core.scope import system_scope
from apps.registry.formats.json_schema import check
from apps.registry.models import Topic
from apps.tenancy.models import AuditEvent

DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"

STR = {"type": "string"}
NUM = {"type": "number"}
INT = {"type": "integer"}
NULL_OR_STR = {"oneOf": [{"type": "null"}, STR]}


def props(**properties):
    return {"properties": properties}


# (case, old, new, compatible under STRICT, compatible under LENIENT)
BOTH_DIALECTS = [
    # ------------------------------------------------------------ required
    ("required array removed", {**props(foo=STR), "required": ["foo"]}, props(foo=STR), True, True),
    ("required array added", props(foo=STR), {**props(foo=STR), "required": ["foo"]}, False, False),
    (
        "required array changed to a name no property declares",
        {**props(foo=STR), "required": ["foo"]},
        {**props(foo=STR), "required": ["bar"]},
        True,
        True,
    ),
    # ------------------------------------------------------------ open content model
    ("properties replaced in an open model", props(foo=STR), props(bar=STR), False, True),
    ("property added to an open model", props(foo=STR), props(foo=STR, bar=NUM), False, True),
    (
        "property with an empty schema added to an open model",
        {"additionalProperties": True},
        {"additionalProperties": True, "properties": {"foo": True}},
        True,
        True,
    ),
    (
        "property with an empty schema removed from an open model",
        {"additionalProperties": True, "properties": {"foo": True}},
        {"additionalProperties": True},
        True,
        True,
    ),
    ("property type changed", props(foo=STR), props(foo=NUM), False, False),
    # ------------------------------------------------------------ additionalProperties
    (
        "additionalProperties removed",
        {"additionalProperties": True},
        {"additionalProperties": False},
        False,
        True,
    ),
    (
        "additionalProperties narrowed",
        {"additionalProperties": True},
        {"additionalProperties": NUM},
        False,
        True,
    ),
    (
        "additionalProperties false dropped",
        {"properties": {}, "additionalProperties": False},
        {"properties": {}},
        True,
        True,
    ),
    (
        "additionalProperties schema changed type",
        {"additionalProperties": STR},
        {"additionalProperties": NUM},
        False,
        False,
    ),
    # ------------------------------------------------------------ closed content model
    (
        "optional property added to a closed model",
        {**props(foo=STR), "additionalProperties": False},
        {**props(foo=STR, bar=NUM), "additionalProperties": False},
        True,
        True,
    ),
    (
        "false property added to a closed model",
        {"additionalProperties": False},
        {"additionalProperties": False, "properties": {"foo": False}},
        True,
        True,
    ),
    (
        "false property removed from a closed model",
        {"additionalProperties": False, "properties": {"foo": False}},
        {"additionalProperties": False},
        True,
        True,
    ),
    # ------------------------------------------------------------ partially open content model
    (
        "property added, covered by patternProperties",
        {
            **props(foo=STR),
            "additionalProperties": False,
            "patternProperties": {"^S_": STR, "^I_": INT},
        },
        {
            **props(foo=STR, I_123=NUM),
            "additionalProperties": False,
            "patternProperties": {"^S_": STR, "^I_": INT},
        },
        True,
        True,
    ),
    (
        "property added, covered by additionalProperties",
        {**props(foo=STR), "additionalProperties": STR},
        {**props(foo=STR, bar=STR), "additionalProperties": STR},
        True,
        True,
    ),
    (
        "property added of another type than additionalProperties",
        {**props(foo=STR), "additionalProperties": STR},
        {**props(foo=STR, bar=NUM), "additionalProperties": STR},
        False,
        False,
    ),
    (
        "required property added, covered by additionalProperties",
        {**props(foo=STR), "additionalProperties": STR},
        {**props(foo=STR, bar=STR), "required": ["bar"], "additionalProperties": STR},
        False,
        False,
    ),
    (
        "property removed, covered by patternProperties",
        {**props(foo=STR, I_123=INT), "additionalProperties": False},
        {
            **props(foo=STR),
            "additionalProperties": False,
            "patternProperties": {"^S_": STR, "^I_": NUM},
        },
        True,
        True,
    ),
    (
        "property removed, covered by additionalProperties",
        {**props(foo=STR, bar=STR), "additionalProperties": False},
        {**props(foo=STR), "additionalProperties": STR},
        True,
        True,
    ),
    (
        "property removed of another type than additionalProperties",
        {**props(foo=STR, bar=NUM), "additionalProperties": False},
        {**props(foo=STR), "additionalProperties": STR},
        False,
        False,
    ),
    (
        "nullable property removed, covered by the same additionalProperties",
        {**props(foo=STR, bar=NULL_OR_STR), "additionalProperties": False},
        {**props(foo=STR), "additionalProperties": NULL_OR_STR},
        True,
        True,
    ),
    (
        "property removed, covered by a wider additionalProperties",
        {**props(foo=STR, bar=STR), "additionalProperties": False},
        {**props(foo=STR), "additionalProperties": NULL_OR_STR},
        True,
        True,
    ),
    # ------------------------------------------------------------ object bounds
    (
        "maxProperties removed",
        {"properties": {}, "maxProperties": 1},
        {"properties": {}},
        True,
        True,
    ),
    ("maxProperties decreased", {"maxProperties": 2}, {"maxProperties": 1}, False, False),
    ("minProperties increased", {"minProperties": 1}, {"minProperties": 2}, False, False),
    ("minProperties decreased", {"minProperties": 2}, {"minProperties": 1}, True, True),
    # ------------------------------------------------------------ combinators
    ("singleton oneOf to singleton allOf", {"oneOf": [STR]}, {"allOf": [STR]}, True, True),
    ("oneOf of two to allOf", {"oneOf": [STR, INT]}, {"allOf": [STR]}, False, False),
    ("plain to oneOf", {"type": "string", "maxLength": 3}, {"oneOf": [NUM, STR]}, True, True),
    ("oneOf loses a branch", {"oneOf": [NUM, STR]}, {"oneOf": [STR]}, False, False),
    ("const changed", props(foo={"const": "red"}), props(foo={"const": "blue"}), False, False),
    ("anything to the empty schema", {"properties": {}}, {}, True, True),
    # ------------------------------------------------------------ arrays
    ("items schema added", {"type": "array"}, {"type": "array", "items": STR}, False, False),
    ("items schema removed", {"type": "array", "items": STR}, {"type": "array"}, True, True),
    (
        "maxItems decreased",
        {"type": "array", "maxItems": 2},
        {"type": "array", "maxItems": 1},
        False,
        False,
    ),
    ("minItems removed", {"type": "array", "minItems": 1}, {"type": "array"}, True, True),
    ("uniqueItems removed", {"type": "array", "uniqueItems": True}, {"type": "array"}, True, True),
]

# Tuples, written in Draft 7's words (`items` list, `additionalItems`); the 2020-12 run
# renames them to `prefixItems` and `items`.
TUPLES = [
    ("tuple removed into an open array", [STR, NUM], None, None, None, True, True),
    ("item added, covered by additionalItems", [STR, NUM], STR, [STR, NUM, STR], STR, True, True),
    (
        "item added of another type than additionalItems",
        [STR, NUM],
        STR,
        [STR, NUM, NUM],
        STR,
        False,
        False,
    ),
    ("item removed, covered by additionalItems", [STR, NUM, STR], STR, [STR, NUM], STR, True, True),
    (
        "nullable item removed, covered by the same additionalItems",
        [STR, NUM, NULL_OR_STR],
        NULL_OR_STR,
        [STR, NUM],
        NULL_OR_STR,
        True,
        True,
    ),
    (
        "item removed of another type than additionalItems",
        [STR, NUM, NUM],
        STR,
        [STR, NUM],
        STR,
        False,
        False,
    ),
    ("tuple item changed type", [STR], None, [NUM], None, False, False),
    ("empty item added to an open tuple", [NUM], True, [NUM, True], True, True, True),
    ("empty item removed from an open tuple", [NUM, True], True, [NUM], True, True, True),
    ("false item added to a closed tuple", [NUM], False, [NUM, False], False, True, True),
    ("false item removed from a closed tuple", [NUM, False], False, [NUM], False, True, True),
    (
        "item added as a closed tuple opens",
        [STR, NUM],
        False,
        [STR, NUM, {"type": "boolean"}],
        True,
        True,
        True,
    ),
    (
        "item removed as a closed tuple opens",
        [STR, NUM, {"type": "boolean"}],
        False,
        [STR, NUM],
        True,
        True,
        True,
    ),
    ("item removed from an open tuple", [STR, NUM], True, [STR], True, True, True),
    ("item added to a closed tuple", [STR], False, [STR, NUM], False, True, True),
    (
        "item removed, covered as a closed tuple partly opens",
        [STR, NUM],
        False,
        [STR],
        NUM,
        True,
        True,
    ),
    ("item added, covered as a partly open tuple opens", [STR], NUM, [STR, NUM], True, True, True),
]

# additionalItems without tuple items: the reference compares the keyword as written.
DRAFT7_ONLY = [
    (
        "additionalItems removed",
        {"additionalItems": True},
        {"additionalItems": False},
        False,
        False,
    ),
    (
        "additionalItems schema changed type",
        {"additionalItems": STR},
        {"additionalItems": NUM},
        False,
        False,
    ),
    (
        "additionalItems narrowed",
        {"type": "array"},
        {"type": "array", "additionalItems": STR},
        False,
        False,
    ),
    (
        "additionalItems widened",
        {"type": "array", "additionalItems": STR},
        {"type": "array"},
        True,
        True,
    ),
    (
        "additionalItems removed under an items schema",
        {"type": "array", "items": STR},
        {"type": "array", "items": STR, "additionalItems": False},
        False,
        False,
    ),
]

# In 2020-12 `items` beside no `prefixItems` is every item's schema; where `items` says
# nothing, `unevaluatedItems` is the tuple's content model.
DRAFT2020_ONLY = [
    (
        "item added to a tuple unevaluatedItems closes",
        {"type": "array", "prefixItems": [STR], "unevaluatedItems": False},
        {"type": "array", "prefixItems": [STR, NUM], "unevaluatedItems": False},
        True,
        True,
    ),
    (
        "item removed from a tuple unevaluatedItems closes",
        {"type": "array", "prefixItems": [STR, NUM], "unevaluatedItems": False},
        {"type": "array", "prefixItems": [STR], "unevaluatedItems": False},
        False,
        False,
    ),
    (
        "item added, covered by unevaluatedItems",
        {"type": "array", "prefixItems": [STR], "unevaluatedItems": NUM},
        {"type": "array", "prefixItems": [STR, NUM], "unevaluatedItems": NUM},
        True,
        True,
    ),
    (
        "item added of another type than unevaluatedItems",
        {"type": "array", "prefixItems": [STR], "unevaluatedItems": NUM},
        {"type": "array", "prefixItems": [STR, STR], "unevaluatedItems": NUM},
        False,
        False,
    ),
    (
        "item added with an empty schema where unevaluatedItems is true",
        {"type": "array", "prefixItems": [STR], "unevaluatedItems": True},
        {"type": "array", "prefixItems": [STR, True], "unevaluatedItems": True},
        True,
        True,
    ),
    ("items true to false", {"items": True}, {"items": False}, False, False),
    ("items schema changed type", {"items": STR}, {"items": NUM}, False, False),
]


def tuple_schema(draft, items, rest):
    schema = {"type": "array"}
    if items is not None:
        schema["prefixItems" if draft == "2020-12" else "items"] = items
    if rest is not None:
        schema["items" if draft == "2020-12" else "additionalItems"] = rest
    return schema


def dialect(draft, schema):
    return {"$schema": DRAFT2020, **schema} if draft == "2020-12" else schema


def rows():
    for draft in ("draft-7", "2020-12"):
        for case, old, new, strict, lenient in BOTH_DIALECTS:
            yield pytest.param(
                dialect(draft, old), dialect(draft, new), strict, lenient, id=f"{draft}: {case}"
            )
        for case, o_items, o_rest, n_items, n_rest, strict, lenient in TUPLES:
            old = dialect(draft, tuple_schema(draft, o_items, o_rest))
            new = dialect(draft, tuple_schema(draft, n_items, n_rest))
            yield pytest.param(old, new, strict, lenient, id=f"{draft}: {case}")
        only = DRAFT7_ONLY if draft == "draft-7" else DRAFT2020_ONLY
        for case, old, new, strict, lenient in only:
            yield pytest.param(
                dialect(draft, old), dialect(draft, new), strict, lenient, id=f"{draft}: {case}"
            )


@pytest.mark.parametrize(("old", "new", "strict", "lenient"), list(rows()))
def test_backward_verdict_is_the_reference_verdict(old, new, strict, lenient):
    for policy, expected in (("STRICT", strict), ("LENIENT", lenient)):
        verdict = check(new, [old], mode="BACKWARD", policy=policy)
        assert verdict.compatible is expected, (policy, [d.as_dict() for d in verdict.breaking])


def test_lenient_names_the_type_change_inside_an_uncovered_property():
    # given a property added whose type the partially open model does not accept
    old = {**props(foo=STR), "additionalProperties": STR}
    new = {**props(foo=STR, bar=NUM), "additionalProperties": STR}

    # when
    verdict = check(new, [old], mode="BACKWARD", policy="LENIENT")

    # then the type change is what breaks, where it is; not being covered is allowed
    assert [(d.kind, d.path) for d in verdict.breaking] == [("TYPE_CHANGED", "#/properties/bar")]
    assert ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/bar") in [
        (d.kind, d.path) for d in verdict.differences
    ]


def test_additional_items_beside_an_items_schema_is_explained_where_it_is():
    old = {"type": "array", "items": STR, "additionalItems": STR}
    new = {"type": "array", "items": STR, "additionalItems": NUM}

    verdict = check(new, [old], mode="BACKWARD")

    assert [(d.kind, d.path) for d in verdict.breaking] == [("TYPE_CHANGED", "#/additionalItems")]


def test_forward_reads_the_required_change_the_other_way():
    # a required flag added to a declared property breaks BACKWARD; FORWARD reads the new
    # schema's data with the old one, where dropping it is allowed
    old = props(foo=STR)
    new = {**props(foo=STR), "required": ["foo"]}

    assert not check(new, [old], mode="BACKWARD").compatible
    assert check(new, [old], mode="FORWARD").compatible
    assert not check(new, [old], mode="FULL").compatible


@pytest.mark.django_db(transaction=True)
def test_the_confluent_client_hears_the_reference_verdicts_under_each_policy(live):
    new_client, _ = live

    def send(document):
        return Schema(json.dumps(document), "JSON")

    # given: one subject per case class, each with its first version
    firsts = {
        "items-value": {"type": "array", "items": STR, "additionalItems": True},
        "required-value": {**props(foo=STR), "required": ["foo"]},
        "extra-value": {"additionalProperties": STR},
        "open-value": {"additionalProperties": True},
    }
    client = new_client()
    for subject, document in firsts.items():
        client.register_schema(subject, send(document))
    seconds = {
        "items-value": {"type": "array", "items": STR, "additionalItems": False},
        "required-value": {**props(foo=STR), "required": ["bar"]},
        "extra-value": {"additionalProperties": NUM},
        "open-value": {"additionalProperties": False},
    }

    def answers():
        client = new_client()
        return {s: client.test_compatibility(s, send(d)) for s, d in seconds.items()}

    # then: STRICT (the default) answers as the reference's strict verdicts
    assert answers() == {
        "items-value": False,
        "required-value": True,
        "extra-value": False,
        "open-value": False,
    }
    # and LENIENT lets the closed content model pass, never the type change under it
    lenient = Topic.objects.filter(name__in=["items", "required", "extra", "open"]).update(
        compatibility_policy="LENIENT"
    )
    assert lenient == 4
    assert answers() == {
        "items-value": False,
        "required-value": True,
        "extra-value": False,
        "open-value": True,
    }


@pytest.mark.django_db(transaction=True)
def test_an_operator_creates_a_lenient_topic_whose_subject_the_client_judges_so(live, operator):
    api = APIClient()
    api.force_login(operator)
    made = api.post(
        "/api/v1/registry/topics/",
        {"name": "open", "compatibility_policy": "LENIENT"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="lenient-open",
    )
    assert made.status_code == 201, made.content
    assert made.json()["compatibility_policy"] == "LENIENT"
    with system_scope():
        audit = AuditEvent.objects.get(action="topic.create", object_id=str(made.json()["id"]))
    assert audit.changes["compatibility_policy"] == [None, "LENIENT"]
    wrong = api.post(
        "/api/v1/registry/topics/",
        {"name": "closed", "compatibility_policy": "SLOPPY"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="lenient-closed",
    )
    assert wrong.status_code == 400
    assert not Topic.objects.filter(name="closed").exists()

    new_client, _ = live
    first = Schema(json.dumps({"additionalProperties": True}), "JSON")
    closed = Schema(json.dumps({"additionalProperties": False}), "JSON")
    new_client().register_schema("open-value", first)
    # STRICT would refuse closing the open content model; the topic's LENIENT lets it in
    assert new_client().test_compatibility("open-value", closed)
    assert new_client().register_schema("open-value", closed) > 0
