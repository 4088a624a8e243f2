"""The reference registry's Protobuf compatibility rules (its `protobuf.diff` package), on
resolved descriptors: `differences(original, update)` lists every change from one schema
to the other, each with the reference's difference type, and `BREAKING` names the types
that make two schemas incompatible. BACKWARD compares (old, new), FORWARD (new, old).

What the rules say, in short: fields are matched by number; adding or removing a field,
renaming it or a oneof, adding or removing enum constants are compatible; changing a
field's kind (scalar, message, map), its scalar group (int32/int64/uint32/uint64/bool and
enums; sint32/sint64; string/bytes; fixed32/sfixed32; fixed64/sfixed64; float; double),
a numeric field's label, a message field's type, the package, removing a message, moving
several fields into one oneof, or a field into a oneof that had others, are not. Steward
adds one rule of protobuf's own guide the reference leaves to linters: a field added on a
number the other schema reserved (docs/registry-protobuf.md)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.registry.formats.errors import SchemaTooComplex
from apps.registry.formats.protobuf.descriptors import FDP, FIELD

KINDS = (
    "PACKAGE_CHANGED",
    "MESSAGE_ADDED",
    "MESSAGE_REMOVED",
    "MESSAGE_MOVED",
    "ENUM_ADDED",
    "ENUM_REMOVED",
    "ENUM_CONST_ADDED",
    "ENUM_CONST_CHANGED",
    "ENUM_CONST_REMOVED",
    "FIELD_ADDED",
    "FIELD_REMOVED",
    "FIELD_NAME_CHANGED",
    "FIELD_KIND_CHANGED",
    "FIELD_SCALAR_KIND_CHANGED",
    "FIELD_NAMED_TYPE_CHANGED",
    "FIELD_NUMERIC_LABEL_CHANGED",
    "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
    "REQUIRED_FIELD_ADDED",
    "REQUIRED_FIELD_REMOVED",
    "ONEOF_ADDED",
    "ONEOF_REMOVED",
    "ONEOF_FIELD_ADDED",
    "ONEOF_FIELD_REMOVED",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
    "FIELD_MOVED_TO_EXISTING_ONEOF",
    "RESERVED_NUMBER_USED",
    "SYNTAX_CHANGED",
)
COMPATIBLE = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
        "SYNTAX_CHANGED",
    }
)
BREAKING = frozenset(KINDS) - COMPATIBLE
MAX_WORK = 200_000  # messages and fields compared in one differences()

_MESSAGES = {
    "PACKAGE_CHANGED": "The package of the {b} schema does not match the package of the {a} one.",
    "MESSAGE_REMOVED": "The {b} schema is missing the message {path} of the {a} schema.",
    "FIELD_KIND_CHANGED": "The kind (scalar, message or map) of field {path} changed.",
    "FIELD_SCALAR_KIND_CHANGED": "Field {path} changed to a scalar type its data cannot be "
    "read as.",
    "FIELD_NAMED_TYPE_CHANGED": "The message type of field {path} changed.",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label of numeric field {path} changed.",
    "REQUIRED_FIELD_ADDED": "The {b} schema adds the required field {path}.",
    "REQUIRED_FIELD_REMOVED": "The {b} schema is missing the required field {path}.",
    "ONEOF_FIELD_REMOVED": "The {b} schema is missing the oneof field {path}.",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Several fields outside a oneof in the {a} schema are in "
    "the oneof {path} of the {b} schema.",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field outside a oneof in the {a} schema is in the "
    "existing oneof {path} of the {b} schema.",
    "RESERVED_NUMBER_USED": "Field {path} of the {b} schema uses a number the {a} schema reserved.",
}

# the reference's scalar groups: a field may change type within its group only
_GROUPS = {
    FIELD.TYPE_INT32: "number",
    FIELD.TYPE_INT64: "number",
    FIELD.TYPE_UINT32: "number",
    FIELD.TYPE_UINT64: "number",
    FIELD.TYPE_BOOL: "number",
    FIELD.TYPE_ENUM: "number",
    FIELD.TYPE_SINT32: "signed",
    FIELD.TYPE_SINT64: "signed",
    FIELD.TYPE_STRING: "string_or_bytes",
    FIELD.TYPE_BYTES: "string_or_bytes",
    FIELD.TYPE_FIXED32: "fixed32",
    FIELD.TYPE_SFIXED32: "fixed32",
    FIELD.TYPE_FIXED64: "fixed64",
    FIELD.TYPE_SFIXED64: "fixed64",
    FIELD.TYPE_FLOAT: "float",
    FIELD.TYPE_DOUBLE: "double",
}


@dataclass(frozen=True, slots=True)
class Found:
    kind: str
    path: str

    def message(self, a: str, b: str) -> str:
        words = _MESSAGES.get(self.kind)
        if words is None:
            return f"{self.kind.replace('_', ' ').capitalize()} at {self.path}."
        return words.format(path=self.path, a=a, b=b)


@dataclass(frozen=True, slots=True)
class _Shape:
    """A message's fields as the rules read them, built once per parsed schema: reading
    protobuf's descriptor messages is most of a check's cost."""

    plain: dict  # number: field, outside any oneof
    oneofs: dict  # oneof name: {number: field}
    signatures: dict  # number: (name, label, type, type name), of every field


_NAMED_TYPES = frozenset({FIELD.TYPE_MESSAGE, FIELD.TYPE_GROUP})


class Types:
    """Every message and enum of a schema and the files it imports, by full name."""

    __slots__ = ("main", "by_name", "package", "shapes")

    def __init__(self, files: dict[str, FDP], main: FDP):
        self.main = main
        self.package = main.package
        self.shapes: dict[str, _Shape] = {}
        self.by_name: dict[str, tuple] = {}
        for file in files.values():
            prefix = f".{file.package}" if file.package else ""
            for message in file.message_type:
                self._message(prefix, message, file.package)
            for enum in file.enum_type:
                self.by_name[f"{prefix}.{enum.name}"] = ("enum", enum, file.package)

    def _message(self, prefix: str, message, package: str) -> None:
        name = f"{prefix}.{message.name}"
        self.by_name[name] = ("message", message, package)
        for nested in message.nested_type:
            self._message(name, nested, package)
        for enum in message.enum_type:
            self.by_name[f"{name}.{enum.name}"] = ("enum", enum, package)

    def shape(self, name: str, message) -> _Shape:
        found = self.shapes.get(name)
        if found is None:
            plain, oneofs, signatures = {}, {}, {}
            for field in message.field:
                number = field.number
                if _in_oneof(field):
                    oneofs.setdefault(message.oneof_decl[field.oneof_index].name, {})[number] = (
                        field
                    )
                else:
                    plain[number] = field
                signatures[number] = (field.name, _label(self, field), field.type, field.type_name)
            found = self.shapes[name] = _Shape(plain, oneofs, signatures)
        return found


class _Walk:
    def __init__(self, original: Types, update: Types):
        self.original, self.update = original, update
        self.found: list[Found] = []
        self.seen: set[tuple[str, str]] = set()
        self.work = 0

    def add(self, kind: str, path: str) -> None:
        self.found.append(Found(kind, path))

    def spend(self, steps: int = 1) -> None:
        self.work += steps
        if self.work > MAX_WORK:
            raise SchemaTooComplex(f"comparing the schemas takes more than {MAX_WORK} steps")


def differences(original: Types, update: Types) -> list[Found]:
    walk = _Walk(original, update)
    if original.package != update.package:
        walk.add("PACKAGE_CHANGED", "#/")
    if (original.main.syntax or "proto2") != (update.main.syntax or "proto2"):
        walk.add("SYNTAX_CHANGED", "#/")
    _types(
        walk,
        "#",
        (_prefix(original.package), original.main.message_type, original.main.enum_type),
        (_prefix(update.package), update.main.message_type, update.main.enum_type),
    )
    return walk.found


def _prefix(package: str) -> str:
    return f".{package}" if package else ""


def _types(walk: _Walk, path: str, original, update) -> None:
    """The messages and enums declared at one level (the file, or a message), matched by
    name: `original`, `update` are (full-name prefix, messages, enums)."""
    (o_prefix, o_messages, o_enums), (u_prefix, u_messages, u_enums) = original, update
    o_index = {m.name: (n, m) for n, m in enumerate(_plain(o_messages))}
    u_index = {m.name: (n, m) for n, m in enumerate(_plain(u_messages))}
    for name in sorted(o_index.keys() | u_index.keys()):
        where = f"{path}/{name}"
        if name not in u_index:
            walk.add("MESSAGE_REMOVED", where)
        elif name not in o_index:
            walk.add("MESSAGE_ADDED", where)
        else:
            (o_n, o_message), (u_n, u_message) = o_index[name], u_index[name]
            _message(
                walk, where, (f"{o_prefix}.{name}", o_message), (f"{u_prefix}.{name}", u_message)
            )
            if o_n != u_n:
                walk.add("MESSAGE_MOVED", where)
    o_enums = {e.name: e for e in o_enums}
    u_enums = {e.name: e for e in u_enums}
    for name in sorted(o_enums.keys() | u_enums.keys()):
        where = f"{path}/{name}"
        if name not in u_enums:
            walk.add("ENUM_REMOVED", where)
        elif name not in o_enums:
            walk.add("ENUM_ADDED", where)
        else:
            _enum(walk, where, o_enums[name], u_enums[name])


def _plain(messages):
    return [m for m in messages if not m.options.map_entry]


def _enum(walk: _Walk, path: str, original, update) -> None:
    o_values = {v.number: v.name for v in original.value}
    u_values = {v.number: v.name for v in update.value}
    for number in sorted(o_values.keys() | u_values.keys()):
        walk.spend()
        where = f"{path}/{number}"
        if number not in u_values:
            walk.add("ENUM_CONST_REMOVED", where)
        elif number not in o_values:
            walk.add("ENUM_CONST_ADDED", where)
            if _reserved(original.reserved_range, number, 0):
                walk.add("RESERVED_NUMBER_USED", where)
        elif o_values[number] != u_values[number]:
            walk.add("ENUM_CONST_CHANGED", where)


def _message(walk: _Walk, path: str, original, update) -> None:
    (o_name, o_message), (u_name, u_message) = original, update
    if (o_name, u_name) in walk.seen:
        return  # a recursive type: compared once
    walk.seen.add((o_name, u_name))
    o_shape = walk.original.shape(o_name, o_message)
    u_shape = walk.update.shape(u_name, u_message)
    o_fields, u_fields = dict(o_shape.plain), u_shape.plain
    _oneofs(walk, path, (o_shape.oneofs, o_fields), u_shape)
    o_signatures, u_signatures = o_shape.signatures, u_shape.signatures
    numbers = sorted(o_fields.keys() | u_fields.keys())
    walk.spend(len(numbers) + 1)
    for number in numbers:
        o_field, u_field = o_fields.get(number), u_fields.get(number)
        if o_field is not None and u_field is not None:
            signature = o_signatures[number]
            if signature == u_signatures[number] and signature[2] not in _NAMED_TYPES:
                continue  # the same scalar field: nothing to tell
        where = f"{path}/{number}"
        if u_field is None:
            required = o_field.label == FIELD.LABEL_REQUIRED
            walk.add("REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED", where)
        elif o_field is None:
            required = u_field.label == FIELD.LABEL_REQUIRED
            walk.add("REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED", where)
            if _reserved(o_message.reserved_range, number, 1):
                walk.add("RESERVED_NUMBER_USED", where)
        else:
            _field(walk, where, o_field, u_field)
    _types(
        walk,
        path,
        (o_name, o_message.nested_type, o_message.enum_type),
        (u_name, u_message.nested_type, u_message.enum_type),
    )


def _in_oneof(field) -> bool:
    return field.HasField("oneof_index") and not field.proto3_optional


def _oneofs(walk: _Walk, path: str, original, u_shape: _Shape) -> None:
    """The reference's oneof rules; a field moved into a new oneof leaves `o_fields`,
    so that it is not also reported removed."""
    o_oneofs, o_fields = original
    u_oneofs = u_shape.oneofs
    in_original_oneof = {n for members in o_oneofs.values() for n in members}
    for name, members in sorted(u_oneofs.items()):
        moved = sum(1 for number in members if o_fields.pop(number, None) is not None)
        existing = sum(1 for number in members if number in in_original_oneof)
        if moved > 1:
            walk.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{path}/{name}")
        elif moved == 1 and existing:
            walk.add("FIELD_MOVED_TO_EXISTING_ONEOF", f"{path}/{name}")
    for name in sorted(o_oneofs.keys() | u_oneofs.keys()):
        where = f"{path}/{name}"
        if name not in u_oneofs:
            walk.add("ONEOF_REMOVED", where)
        elif name not in o_oneofs:
            walk.add("ONEOF_ADDED", where)
        else:
            o_members, u_members = o_oneofs[name], u_oneofs[name]
            for number in sorted(o_members.keys() | u_members.keys()):
                walk.spend()
                if number not in u_members:
                    walk.add("ONEOF_FIELD_REMOVED", f"{where}/{number}")
                elif number not in o_members:
                    walk.add("ONEOF_FIELD_ADDED", f"{where}/{number}")
                else:
                    _field(walk, f"{where}/{number}", o_members[number], u_members[number])


def _reserved(ranges, number: int, end_extra: int) -> bool:
    return any(r.start <= number < r.end + (1 - end_extra) for r in ranges)


def _field(walk: _Walk, path: str, original, update) -> None:
    if original.name != update.name:
        walk.add("FIELD_NAME_CHANGED", path)
    _typed(
        walk,
        path,
        (_label(walk.original, original), original),
        (_label(walk.update, update), update),
    )


def _label(types: Types, field) -> str | None:
    """The label as the reference's parser reads it from the text: none on a proto3
    singular field that does not say `optional`."""
    if field.label == FIELD.LABEL_REPEATED:
        return "repeated"
    if field.label == FIELD.LABEL_REQUIRED:
        return "required"
    if _in_oneof(field) or (types.main.syntax == "proto3" and not field.proto3_optional):
        return None  # a oneof's fields are written without one in proto2 too
    return "optional"


def _kind(types: Types, field) -> tuple[str, object]:
    """("scalar", scalar type), ("map", entry) or ("message", (full name, definition))."""
    if field.type in (FIELD.TYPE_MESSAGE, FIELD.TYPE_GROUP):
        found = types.by_name.get(field.type_name)
        if found is not None and found[1].options.map_entry:
            return "map", found[1]
        return "message", (field.type_name, found)
    return "scalar", field.type


def _typed(walk: _Walk, path: str, original, update) -> None:
    (o_label, o_field), (u_label, u_field) = original, update
    o_kind, o_what = _kind(walk.original, o_field)
    u_kind, u_what = _kind(walk.update, u_field)
    if o_kind != u_kind:
        walk.add("FIELD_KIND_CHANGED", path)
    elif o_kind == "scalar":
        group = _GROUPS[o_what]
        if group != _GROUPS[u_what]:
            walk.add("FIELD_SCALAR_KIND_CHANGED", path)
        elif o_label is not None and u_label is not None and o_label != u_label:
            if group == "string_or_bytes":
                walk.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED", path)
            else:
                walk.add("FIELD_NUMERIC_LABEL_CHANGED", path)
    elif o_kind == "map":
        for n in (0, 1):
            o_entry, u_entry = o_what.field[n], u_what.field[n]
            _typed(walk, path, (None, o_entry), (None, u_entry))
    else:
        _named(walk, path, o_what, u_what)


def _named(walk: _Walk, path: str, original, update) -> None:
    """A message field's type: the same name within its package, and (compared as the
    fields' own messages) compatible."""
    (o_name, o_found), (u_name, u_found) = original, update
    if o_found is None or u_found is None:
        if o_name != u_name:
            walk.add("FIELD_NAMED_TYPE_CHANGED", path)
        return
    if _local(o_name, o_found[2]) != _local(u_name, u_found[2]):
        walk.add("FIELD_NAMED_TYPE_CHANGED", path)
        return
    if (o_name, u_name) in walk.seen:
        return
    before = len(walk.found)
    _message(walk, path, (o_name, o_found[1]), (u_name, u_found[1]))
    if any(d.kind in BREAKING for d in walk.found[before:]):
        walk.add("FIELD_NAMED_TYPE_CHANGED", path)


def _local(full_name: str, package: str) -> str:
    prefix = f".{package}." if package else "."
    return full_name[len(prefix) :] if full_name.startswith(prefix) else full_name
