"""A JSON Schema parsed, validated against its draft, and its identity."""

from __future__ import annotations

import hashlib
import json

from jsonschema.exceptions import SchemaError

from apps.registry.formats import loader
from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.meta import _validator_for, plainly_valid
from apps.registry.formats.json_schema.refs import _check_refs
from apps.registry.formats.json_schema.vocabulary import (
    MAX_JSON_DEPTH,
    MAX_JSON_MEMBERS,
    MAX_JSON_NODES,
)
from apps.registry.formats.loader import json_type_name


def canonical(schema) -> str:
    """The schema as compact JSON with sorted keys: equal schemas, equal text."""
    if isinstance(schema, str | bytes | bytearray):
        schema = parse_schema(schema)
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(schema) -> str:
    """Hex SHA-256 of the canonical form."""
    return hashlib.sha256(canonical(schema).encode("utf-8")).hexdigest()


def parse_schema(text_or_obj) -> dict | bool:
    """Parse (if text) and validate a JSON Schema; raise InvalidSchema with a reason.

    Draft 4, 6, 7, 2019-09 or 2020-12, as "$schema" says (Draft 7 when it says nothing,
    as the reference registry reads it), checked against the draft's meta-schema by the
    `jsonschema` library. Every "$ref" must be local ("#...")
    and resolve; nothing is ever fetched.
    """
    value = text_or_obj
    if isinstance(value, str | bytes | bytearray):
        value = loader.decode(value)
    if not isinstance(value, dict | bool):
        raise InvalidSchema(f"a JSON Schema is an object or a boolean, not {json_type_name(value)}")
    loader.bound(
        value,
        max_depth=MAX_JSON_DEPTH,
        max_nodes=MAX_JSON_NODES,
        max_members=MAX_JSON_MEMBERS,
        plain_values=True,
        too_deep=f"the schema nests deeper than {MAX_JSON_DEPTH} levels",
        bad_key="not JSON: an object key is {type}",
    )
    validator, draft = _validator_for(value)
    try:
        # The meta-schema check costs ~0.1 ms a node in `jsonschema` (2020-12 resolves
        # $dynamicRef at every sub-schema); most schemas use only plain keywords, which
        # are checked here in microseconds. Anything else, and anything this check
        # would refuse, goes to the library, whose verdict and message stand.
        fast = draft in ("Draft 7", "Draft 2020-12")
        if not (fast and plainly_valid(value, draft == "Draft 7")):
            validator.check_schema(value)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        at = f" at #/{where}" if where else ""
        raise InvalidSchema(f"not a valid JSON Schema ({draft}): {exc.message}{at}") from None
    except RecursionError:
        raise SchemaTooComplex("the schema nests too deeply to validate") from None
    _check_refs(value)
    return value
