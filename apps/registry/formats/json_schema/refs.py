"""Local `$ref`s: resolved, checked, and the registry's references bundled into a schema
and out of it again. Nothing is ever fetched."""

from __future__ import annotations

import json
from urllib.parse import quote, unquote, urljoin

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.meta import _DRAFTS, _REF_ALONE
from apps.registry.formats.json_schema.vocabulary import (
    _MISSING,
    _ONE_SCHEMA,
    _REF_KEYS,
    _SCHEMA_LISTS,
    _SCHEMA_MAPS,
    MAX_DEPTH,
    MAX_REF_HOPS,
    _escape,
)


def _remote_reason(ref, where) -> str:
    return (
        f"$ref {ref!r} at {where} is not local: only references inside the schema ('#...')"
        " are allowed, and nothing is ever fetched"
    )


def _pointer(root, ref, anchors):
    fragment = ref[1:]
    if not fragment:
        return root
    if fragment[0] != "/":
        name = unquote(fragment)
        target = anchors().get(name, _MISSING)
        if target is _MISSING:
            raise InvalidSchema(f"$ref {ref!r} names an anchor the schema does not define")
        return target
    node = root
    for raw in fragment[1:].split("/"):
        part = unquote(raw) if "%" in raw else raw
        if "~" in part:
            part = part.replace("~1", "/").replace("~0", "~")
        if type(node) is dict:
            if part not in node:
                raise InvalidSchema(f"$ref {ref!r} does not resolve inside the schema")
            node = node[part]
        elif type(node) is list and part.isdigit() and part.isascii() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise InvalidSchema(f"$ref {ref!r} does not resolve inside the schema")
    return node


def _is_draft7(root) -> bool:
    """Whether the schema's draft ignores a "$ref"'s siblings: Draft 4, 6 and 7, and a
    schema that names no draft (read as Draft 7)."""
    if type(root) is not dict:
        return True
    uri = root.get("$schema")
    if type(uri) is not str:
        return True
    found = _DRAFTS.get(uri.strip().rstrip("#"))
    return found is None or found[1] in _REF_ALONE


def _subschemas(node):
    """(path segment, sub-schema) for every sub-schema position of a schema object."""
    for keyword in _ONE_SCHEMA:
        child = node.get(keyword, _MISSING)
        if child is not _MISSING and (type(child) is dict or type(child) is bool):
            yield keyword, child
    for keyword in _SCHEMA_LISTS:
        children = node.get(keyword)
        if type(children) is list:
            for i, child in enumerate(children):
                if type(child) is dict or type(child) is bool:
                    yield f"{keyword}/{i}", child
    for keyword in _SCHEMA_MAPS:
        children = node.get(keyword)
        if type(children) is dict:
            for key, child in children.items():
                if type(child) is dict or type(child) is bool:
                    yield f"{keyword}/{_escape(key)}", child


def _collect(root, *, check: bool):
    """The $refs (with where they are) and the anchors of a schema; checks depth if asked."""
    refs = []
    anchors: dict = {}
    stack = [(root, "#", 1)]
    while stack:
        node, where, depth = stack.pop()
        if type(node) is not dict:
            continue
        if check and depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schema nests deeper than {MAX_DEPTH} levels at {where}")
        for keyword in _REF_KEYS:
            if keyword in node:
                refs.append((node[keyword], where, node))
        for keyword in ("$anchor", "$dynamicAnchor"):
            name = node.get(keyword)
            if type(name) is str:
                anchors.setdefault(name, node)
        legacy = node.get("$id")  # Draft 7 spells a plain-name anchor "$id": "#name"
        if type(legacy) is str and legacy.startswith("#") and len(legacy) > 1:
            anchors.setdefault(legacy[1:], node)
        for segment, child in _subschemas(node):
            stack.append((child, f"{where}/{segment}", depth + 1))
    return refs, anchors


def _check_refs(root):
    refs, anchors = _collect(root, check=True)
    for ref, where, _ in refs:
        if type(ref) is not str:
            raise InvalidSchema(f"$ref at {where} is not a string")
        if not ref.startswith("#"):
            raise InvalidSchema(_remote_reason(ref, where))
    settled: set = set()  # ids of $ref nodes whose chain ends at a schema
    for ref, where, node in refs:
        chain = [id(node)]
        target = _pointer(root, ref, lambda: anchors)
        while (
            type(target) is dict
            and ("$ref" in target or "$dynamicRef" in target)
            and id(target) not in settled
        ):
            if id(target) in chain or len(chain) > MAX_REF_HOPS:
                raise InvalidSchema(f"$ref {ref!r} at {where} is circular")
            chain.append(id(target))
            following = target.get("$ref", target.get("$dynamicRef"))
            target = _pointer(root, following, lambda: anchors)
        if type(target) is not dict and type(target) is not bool:
            raise InvalidSchema(f"$ref {ref!r} at {where} does not point at a schema")
        settled.update(chain)


# --------------------------------------------------------------------------- references

# Where a bundled schema keeps the schemas its references name: a member of its
# definitions whose key no hand-written schema would use, so that bundling undoes cleanly.
REFERENCE_PREFIX = "steward:reference:"


def _defs_keyword(root) -> str:
    """`$defs` in the drafts that define it, `definitions` in the drafts before."""
    return "definitions" if _is_draft7(root) else "$defs"


def _pointer_segment(key: str) -> str:
    # JSON pointer escaping, then percent-encoding: _pointer undoes both, in that order.
    return quote(key.replace("~", "~0").replace("/", "~1"), safe="")


def _rewrite_refs(root, rewrite) -> None:
    """Apply `rewrite` to every `$ref` of the schema positions under `root`, in place."""
    stack = [root]
    while stack:
        node = stack.pop()
        if type(node) is not dict:
            continue
        for keyword in _REF_KEYS:
            ref = node.get(keyword)
            if type(ref) is str:
                node[keyword] = rewrite(ref)
        stack.extend(child for _, child in _subschemas(node))


def bundle(document, references: list[tuple[str, object]]):
    """The schema with the schemas its references name embedded, so that it stands alone.

    `references` is (name, referenced schema) in the order the registration gave them; a
    referenced schema is itself a bundle when it has references of its own. Every `$ref`
    whose URI is a reference's name (or, when the schema has an `$id`, resolves to the same
    URI as the name) points at the embedded copy afterwards: the registry's stored schema
    is what `$ref` resolves to, and nothing is fetched. The result is an ordinary JSON
    Schema with local `$ref`s only, which parse_schema() validates and check() compares,
    so a change inside a referenced schema shows through the schema that references it.
    """
    if type(document) is not dict or not references:
        return document
    bundled = json.loads(json.dumps(document))
    base = bundled.get("$id") if type(bundled.get("$id")) is str else ""
    keyword = _defs_keyword(bundled)
    targets = {}
    for name, _referenced in references:
        key = REFERENCE_PREFIX + name
        targets[name] = f"#/{keyword}/{_pointer_segment(key)}"
        if base:
            targets.setdefault(urljoin(base, name), targets[name])

    def to_embedded(ref: str) -> str:
        uri, hash_, fragment = ref.partition("#")
        if not uri:
            return ref
        target = targets.get(uri) or (targets.get(urljoin(base, uri)) if base else None)
        if target is None:
            return ref  # not a reference's: parse_schema refuses it as remote
        return target + (fragment if fragment.startswith("/") else "")

    _rewrite_refs(bundled, to_embedded)
    defs = bundled.setdefault(keyword, {})
    if type(defs) is not dict:
        raise InvalidSchema(f"{keyword} is not an object")
    for name, referenced in references:
        key = REFERENCE_PREFIX + name
        embedded = json.loads(json.dumps(referenced))
        if type(embedded) is dict:
            # its own draft and base URI would change how the copy's $refs resolve
            embedded.pop("$schema", None)
            embedded.pop("$id", None)
            prefix = f"#/{keyword}/{_pointer_segment(key)}"
            _rewrite_refs(
                embedded,
                lambda ref, prefix=prefix: (
                    prefix + ref[1:] if ref.startswith("#/") else (prefix if ref == "#" else ref)
                ),
            )
        defs[key] = embedded
    return bundled


def unbundle(document, names: list[str]):
    """The schema as it was registered: bundle() undone for the references `names`."""
    if type(document) is not dict or not names:
        return document
    plain = json.loads(json.dumps(document))
    keyword = _defs_keyword(plain)
    defs = plain.get(keyword)
    if type(defs) is dict:
        for name in names:
            defs.pop(REFERENCE_PREFIX + name, None)
        if not defs:
            plain.pop(keyword)
    embedded = {f"#/{keyword}/{_pointer_segment(REFERENCE_PREFIX + n)}": n for n in names}

    def to_name(ref: str) -> str:
        for target, name in embedded.items():
            if ref == target:
                return name
            if ref.startswith(target + "/"):
                return f"{name}#{ref[len(target) :]}"
        return ref

    _rewrite_refs(plain, to_name)
    return plain
