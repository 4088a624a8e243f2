"""The named types a schema's references define, written out where the schema uses them."""

from __future__ import annotations

from apps.registry.formats.avro.vocabulary import _DEFINING, PRIMITIVES


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _definitions(value, found: dict) -> None:
    """Every named type defined in a schema in normal form (full names), by full name."""
    if isinstance(value, list):
        for branch in value:
            _definitions(branch, found)
    elif isinstance(value, dict):
        kind = value.get("type")
        if kind in _DEFINING and isinstance(value.get("name"), str):
            found.setdefault(value["name"], value)
        if kind in ("record", "error"):
            for item in value.get("fields") or ():
                if isinstance(item, dict):
                    _definitions(item.get("type"), found)
        elif kind == "array":
            _definitions(value.get("items"), found)
        elif kind == "map":
            _definitions(value.get("values"), found)
        elif isinstance(kind, dict | list):
            _definitions(kind, found)


class _Inliner:
    """Writes each referenced named type out where the schema first uses it, the order in
    which a parser meets the uses, so that the schema stands alone."""

    def __init__(self, definitions: dict):
        self.definitions = definitions
        self.defined: set[str] = set()

    def type(self, value, namespace: str):
        if isinstance(value, str):
            full = _full_name(value, namespace)
            if full in self.definitions and full not in self.defined:
                return self.inline(full)
            return value
        if isinstance(value, list):
            return [self.type(branch, namespace) for branch in value]
        if not isinstance(value, dict):
            return value
        kind = value.get("type")
        if kind in ("record", "error"):
            name = value.get("name") if isinstance(value.get("name"), str) else ""
            own = value.get("namespace", namespace)
            inner = name.rpartition(".")[0] if "." in name else (own or "")
            fields = [
                {**item, "type": self.type(item.get("type"), inner)}
                if isinstance(item, dict)
                else item
                for item in value.get("fields") or ()
            ]
            return {**value, "fields": fields}
        if kind == "array":
            return {**value, "items": self.type(value.get("items"), namespace)}
        if kind == "map":
            return {**value, "values": self.type(value.get("values"), namespace)}
        if isinstance(kind, str) and kind not in PRIMITIVES and kind not in _DEFINING:
            # {"type": "com.acme.Address"} is the named type itself, as Avro Java reads it
            return self.type(kind, namespace)
        if isinstance(kind, dict | list):
            return {**value, "type": self.type(kind, namespace)}
        return value

    def inline(self, full: str):
        """A copy of the definition, its nested types already written out left as names."""

        def copy(value, top: bool):
            if isinstance(value, list):
                return [copy(branch, False) for branch in value]
            if not isinstance(value, dict):
                return value
            kind = value.get("type")
            name = value.get("name")
            if kind in _DEFINING and isinstance(name, str):
                if not top and name in self.defined:
                    return name
                self.defined.add(name)
                value = dict(value)
                if "." not in name:  # the null namespace, not the enclosing one's
                    value["namespace"] = ""
            if kind in ("record", "error"):
                return {
                    **value,
                    "fields": [
                        {**item, "type": copy(item.get("type"), False)}
                        for item in value.get("fields") or ()
                    ],
                }
            if kind == "array":
                return {**value, "items": copy(value.get("items"), False)}
            if kind == "map":
                return {**value, "values": copy(value.get("values"), False)}
            if isinstance(kind, dict | list):
                return {**value, "type": copy(kind, False)}
            return value

        return copy(self.definitions[full], True)
