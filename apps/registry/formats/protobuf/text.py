"""A FileDescriptorProto written as `.proto` text in the layout the reference registry
answers (its `ProtobufSchemaUtils.toString`, which `canonicalString()` is; learnt from its
code, documentation and public tests, written anew here):

- the file: `syntax` (when the file declares one), `package`, then, each group after a
  blank line, the imports (public ones after the others), the file's options, every
  message followed by every enum (no blank line between types), the `extend` blocks and
  the services;
- a message: `message Name {`, then its reserved numbers and names, options, fields,
  oneofs, groups, extension ranges, `extend` blocks and nested types (messages, then
  enums), a blank line between two of these sections, two-space indents; `message Name
  {}` when empty;
- an enum: its reserved values, options and constants with no blank line between;
- a field's options in brackets, on its line when it has one, one per line when more
  (`default` and `json_name` after the others); an option's message value as
  `{ key: value, … }` one entry per line; custom options (`(acme.rules).max = 3`) kept;
- a number as the file spelt it (`1e10`, `0x10`), wherever it is;
- comments dropped.

`normalized=True` is the reference's `normalize`: every type named in full (a leading
dot), a map field as `map<K, V>` without its synthetic entry message, imports sorted,
options sorted by name, fields by number, oneofs by their first field's number, enum
constants by number, each reserved value and extension range on its own line sorted,
numbers written plainly by their value (_plain), every json_name kept, and `syntax`
written for proto3 only; a custom option
whose extension the file can see (`extensions`) named in full and one extension's
options merged into one. It is what Steward takes as a schema's identity.

The file's own grouping of its `reserved` and `extensions` statements, the order it
wrote its options in and the tokens of its numbers come from its Layout (descriptors.py),
as the reference keeps them from the file's text. A schema sent as a descriptor has none,
and is written as the reference writes a descriptor: each reserved value and extension
range in a statement of its own, the standard options in the reference's order, then the
custom ones."""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_EVEN, Context, Decimal

from google.protobuf import descriptor_pb2
from proto_schema_parser import ast

from apps.registry.formats.protobuf.descriptors import (
    FDP,
    FIELD,
    SCALARS,
    Layout,
    Number,
    aggregate_literal,
    joined,
    quoted,
    unescaped,
)

_SCALAR_NAMES = {number: name for name, number in SCALARS.items()}
_LABELS = {
    FIELD.LABEL_OPTIONAL: "optional",
    FIELD.LABEL_REQUIRED: "required",
    FIELD.LABEL_REPEATED: "repeated",
}
_FIELD_MAX = 536_870_911  # past it, a range's end is written `max`
_INDENT = "  "
# The order the reference writes the standard options of a descriptor in (its
# ProtobufSchema.toProtoFile, one list for every kind of element, as each kind's own
# order is a part of it); an option it does not know comes after them.
_STANDARD_ORDER = {
    name: n
    for n, name in enumerate(
        (
            "java_package",
            "java_outer_classname",
            "java_multiple_files",
            "java_generate_equals_and_hash",
            "java_string_check_utf8",
            "optimize_for",
            "go_package",
            "cc_generic_services",
            "java_generic_services",
            "py_generic_services",
            "php_generic_services",
            "no_standard_descriptor_accessor",
            "ctype",
            "packed",
            "jstype",
            "allow_alias",
            "deprecated",
            "cc_enable_arenas",
            "objc_class_prefix",
            "csharp_namespace",
            "swift_prefix",
            "php_class_prefix",
            "php_namespace",
            "php_metadata_namespace",
            "ruby_package",
            "idempotency_level",
            "map_entry",
        )
    )
}
_NO_MESSAGE = descriptor_pb2.DescriptorProto()  # an extension's: it has no map entries
_NUMERIC = set(SCALARS.values()) - {FIELD.TYPE_STRING, FIELD.TYPE_BYTES, FIELD.TYPE_BOOL}


def proto_text(
    proto: FDP,
    *,
    normalized: bool = False,
    layout: Layout | None = None,
    extensions: dict[str, bool] | None = None,
) -> str:
    """`layout`: the file's own grouping and order, for the text it was parsed from;
    `extensions`: the extensions the file can see (full name: whether repeated), which
    normalize names custom options by and merges (known_extensions())."""
    return _Writer(proto, normalized, None if normalized else layout, extensions or {}).file()


def known_extensions(files) -> dict[str, bool]:
    """Every extension the files define, by full name (no leading dot): whether it is
    repeated."""
    found = {}

    def collect(scope: str, extensions, messages) -> None:
        for field in extensions:
            found[joined(scope, field.name)] = field.label == FIELD.LABEL_REPEATED
        for message in messages:
            collect(joined(scope, message.name), message.extension, message.nested_type)

    for proto in files:
        collect(proto.package, proto.extension, proto.message_type)
    return found


class _Writer:
    def __init__(self, proto: FDP, normalized: bool, layout: Layout | None, extensions):
        self.proto = proto
        self.normalized = normalized
        self.layout = layout
        self.extensions = extensions if normalized else {}
        self.proto3 = proto.syntax == "proto3"
        # the reference writes a descriptor's map as protoc has it, a repeated field of
        # its entry message (`option map_entry = true;`), and `map<K, V>` otherwise
        self.maps = normalized or layout is not None

    def file(self) -> str:
        proto = self.proto
        out = []
        if proto.syntax and (self.proto3 or not self.normalized):
            out.append(f'syntax = "{proto.syntax}";')
        if proto.package:
            out.append(f"package {proto.package};")
        options = self.options(proto.options, ("file", ""))
        groups = [self.imports(), [f"option {o};" for o in options]]
        types = [line for m in self.messages(proto.message_type) for line in self.message(m, "")]
        types += [line for enum in proto.enum_type for line in self.enum(enum, "")]
        extends = self.extends(proto.extension, "")
        groups += [types, extends, [line for s in proto.service for line in self.service(s)]]
        for group in groups:
            if group:
                out.append("")
                out.extend(line for text in group for line in text.split("\n"))
        return "\n".join(out) + "\n"

    def imports(self) -> list[str]:
        proto = self.proto
        public = {proto.dependency[n] for n in proto.public_dependency}
        weak = {proto.dependency[n] for n in proto.weak_dependency}
        kinds = {"": [], "public ": [], "weak ": []}
        for name in proto.dependency:
            kinds["public " if name in public else "weak " if name in weak else ""].append(name)
        lines = []
        for kind, names in kinds.items():
            if self.normalized:
                names = sorted(set(names))
            lines.extend(f'import {kind}"{name}";' for name in names)
        return lines

    # ------------------------------------------------------------------ options

    def options(self, options, key: tuple[str, str], extra=()) -> list[str]:
        """Each option of an options message as `name = value` (a value of several lines
        for a message literal), in the file's order (`key`: the element's, in its
        Layout); `extra`: (name, text) pairs written after them (a field's default and
        json_name)."""
        standard = {}
        for field, value in options.ListFields():
            if field.name == "uninterpreted_option" or (field.name == "map_entry" and self.maps):
                continue
            if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE:
                continue  # no standard option of proto2 or proto3 is a message
            standard[field.name] = f"{field.name} = {self.standard_value(field, value)}"
        custom, merged = [], {}
        numbers = self.layout.numbers.get(key, {}) if self.layout is not None else {}
        for n, kept in enumerate(options.uninterpreted_option):
            parts = [(p.name_part, p.is_extension) for p in kept.name]
            extension = self.extension(parts[0][0], key[1]) if parts[0][1] else None
            if extension is not None:
                # normalize, the extension known: named in full, `(ext).a.b = v` as
                # `(ext) = { a: { b: v } }`, one option per extension unless repeated
                value = self.option_value(kept)
                for part, _ in reversed(parts[1:]):
                    value = ast.MessageLiteral([ast.MessageLiteralField(part, value)])
                if extension in merged and not self.extensions[extension]:
                    merged[extension][1] = _merged(merged[extension][1], value)
                else:
                    entry = [extension, value]
                    merged.setdefault(extension, entry)
                    custom.append(entry)
                continue
            name = ".".join(f"({part})" if extension else part for part, extension in parts)
            # the reference names `(acme.rules).max_len` by its extension, `acme.rules`,
            # without the parentheses, and sorts by that name alone
            value = self.option_value(kept, numbers.get(n))
            custom.append((parts[0][0], f"{name}{self.written_value(value)}"))
        custom = [  # a known extension's [name, value] written now its values are merged
            (entry[0], f"({entry[0]}){self.written_value(entry[1])}")
            if isinstance(entry, list)
            else entry
            for entry in custom
        ]
        order = self.layout.options.get(key) if self.layout is not None else None
        if order is not None:
            found = [(n, standard.pop(n, None)) if isinstance(n, str) else custom[n] for n in order]
            found = [pair for pair in found if pair[1] is not None]
            found.extend(standard.items())  # none: each was written
        else:
            found = sorted(standard.items(), key=lambda pair: _STANDARD_ORDER.get(pair[0], 99))
            found.extend(custom)
        found.extend(extra)
        if self.normalized:
            found.sort(key=lambda pair: pair[0])  # stable: one extension's keep their order
        return [text for _, text in found]

    def standard_value(self, field, value) -> str:
        if field.enum_type is not None:
            return field.enum_type.values_by_number[value].name
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | bytes):
            return quoted(value)
        return self.number(value)

    def extension(self, name: str, path: str) -> str | None:
        """The full name of the extension a custom option names, looked up as protoc
        looks a name up: from the element's scope outwards; None when the file cannot
        see its definition."""
        if name.startswith("."):
            return name[1:] if name[1:] in self.extensions else None
        scope = [part for part in joined(self.proto.package, path).split(".") if part]
        for end in range(len(scope), -1, -1):
            candidate = ".".join([*scope[:end], name])
            if candidate in self.extensions:
                return candidate
        return None

    @staticmethod
    def option_value(kept, token: str | None = None):
        """An uninterpreted option's value as a message literal's value is parsed;
        `token`: a number's as the file wrote it (its Layout), when it did."""
        if kept.HasField("aggregate_value"):
            return aggregate_literal(kept.aggregate_value)
        if kept.HasField("identifier_value"):
            name = kept.identifier_value
            return name == "true" if name in ("true", "false") else ast.Identifier(name)
        if kept.HasField("string_value"):
            return quoted(kept.string_value)[1:-1]  # as written: literal_value unescapes
        if kept.HasField("positive_int_value"):
            value = kept.positive_int_value
        elif kept.HasField("negative_int_value"):
            value = kept.negative_int_value
        else:
            value = kept.double_value
        return value if token is None else Number(token, value)

    def written_value(self, value) -> str:
        if isinstance(value, ast.MessageLiteral):
            return " = {\n" + self.literal(value) + "}"
        return f" = {self.literal_value(value)}"

    def literal(self, literal: ast.MessageLiteral) -> str:
        """A message literal's entries, one a line, indented (`key: value,`)."""
        grouped: dict[str, object] = {}
        for field in literal.elements:
            if field.name not in grouped:
                grouped[field.name] = field.value
                continue
            # a key set again is a list of its values, as the reference reads a literal
            # (wire's OptionReader) and writes a repeated field of a descriptor's option
            before = grouped[field.name]
            grouped[field.name] = [*(before if isinstance(before, list) else [before]), field.value]
        entries = list(grouped.items())
        if self.normalized:
            entries = sorted((k, v) for k, v in entries if v != [])
        lines = []
        for n, (key, value) in enumerate(entries):
            comma = "," if n < len(entries) - 1 else ""
            lines.append(f"{key}: {self.literal_value(value)}{comma}")
        return _indented("\n".join(lines)) + "\n" if lines else ""

    def literal_value(self, value) -> str:
        if isinstance(value, ast.MessageLiteral):
            return "{\n" + self.literal(value) + "}"
        if isinstance(value, list):
            if self.normalized and len(value) == 1:
                return self.literal_value(value[0])
            items = [self.literal_value(v) for v in value]
            body = ",\n".join(items)
            return "[\n" + _indented(body) + "\n]" if items else "[\n]"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, ast.Identifier):
            return value.name
        if isinstance(value, str):
            return quoted(unescaped(value))  # the parser hands a literal as written
        return self.number(value)

    def number(self, value) -> str:
        """A number as the file wrote it (a Number: its token, as the reference keeps
        it), else as Python writes it (a descriptor's, which has no token); normalized,
        by its value, as the reference normalizes one (_plain)."""
        if isinstance(value, Number):
            if not self.normalized:
                return value.text
            value = value.value
        if self.normalized:
            return _plain(value)
        if isinstance(value, float) and not math.isfinite(value):
            return _special(value)
        return repr(value)

    def bracketed(self, options: list[str]) -> str:
        """A field's or enum constant's options: ` [one]`, or one a line."""
        if not options:
            return ""
        if len(options) == 1:
            return f" [{options[0]}]"
        body = ",\n".join(options)
        return " [\n" + _indented(body) + "\n]"

    # ------------------------------------------------------------------ types

    def messages(self, messages) -> list:
        return [m for m in messages if not (self.normalized and m.options.map_entry)]

    def message(self, message, parent: str) -> list[str]:
        path = joined(parent, message.name)
        groups = {_last(f.type_name): f for f in message.field if f.type == FIELD.TYPE_GROUP}
        plain = [f for f in message.field if not self._in_oneof(f) and f.type != FIELD.TYPE_GROUP]
        nested = [
            n
            for n in self.messages(message.nested_type)
            if n.name not in groups
            and not (self.maps and n.options.map_entry and self._map_of(message, n))
        ]
        sections = [
            self.reserved(message.reserved_range, message.reserved_name, 1, path),
            [f"option {o};" for o in self.options(message.options, ("message", path))],
            self.fields(message, plain, path),
            self.oneofs(message, path),
            [line for f in self.ordered(groups.values()) for line in self.group(message, f, path)],
            self.ranges("extensions", message.extension_range, 1, path),
            self.extends(message.extension, path),
            [line for n in nested for line in self.message(n, path)]
            + [line for enum in message.enum_type for line in self.enum(enum, path)],
        ]
        return _block(f"message {message.name}", sections)

    def _map_of(self, message, entry) -> bool:
        """Whether the nested type is a map field's entry (written as the field's
        `map<K, V>`, never as a message)."""
        return any(
            f.label == FIELD.LABEL_REPEATED and _last(f.type_name) == entry.name
            for f in message.field
        )

    @staticmethod
    def _in_oneof(field) -> bool:
        """Whether the field belongs to a written oneof (a proto3 optional field's
        synthetic oneof is written as `optional`)."""
        return field.HasField("oneof_index") and not field.proto3_optional

    def ordered(self, fields):
        fields = list(fields)
        return sorted(fields, key=lambda f: f.number) if self.normalized else fields

    def fields(self, message, fields, path: str) -> list[str]:
        return [line for f in self.ordered(fields) for line in self.field(message, f, path)]

    def oneofs(self, message, path: str) -> list[str]:
        found = []
        for index, oneof in enumerate(message.oneof_decl):
            members = [
                f
                for f in message.field
                if f.HasField("oneof_index") and f.oneof_index == index and not f.proto3_optional
            ]
            if members:  # else a proto3 optional field's synthetic oneof
                found.append((oneof, self.ordered(members)))
        if self.normalized:
            found.sort(key=lambda pair: pair[1][0].number)
        lines = []
        for oneof, members in found:
            plain = [f for f in members if f.type != FIELD.TYPE_GROUP]
            grouped = [f for f in members if f.type == FIELD.TYPE_GROUP]
            options = self.options(oneof.options, ("oneof", joined(path, oneof.name)))
            sections = [
                [f"option {o};" for o in options],
                [line for f in plain for line in self.field(message, f, path)],
                [line for f in grouped for line in self.group(message, f, path)],
            ]
            lines.extend(_block(f"oneof {oneof.name}", sections))
        return lines

    def group(self, message, field, path: str) -> list[str]:
        group = next(n for n in message.nested_type if n.name == _last(field.type_name))
        label = "" if self._in_oneof(field) else _LABELS[field.label] + " "
        head = f"{label}group {group.name} = {field.number}"
        return _block(head, [self.fields(group, group.field, joined(path, group.name))])

    def field(self, message, field, path: str, kind: str = "field") -> list[str]:
        key = (kind, joined(path, field.name))
        extra = []
        if field.HasField("default_value"):
            extra.append(("default", f"default = {self.default(field, key)}"))
        # a json_name written or sent is written back, normalized too, as the reference
        # does: a descriptor carrying every field's is another schema than its text
        if field.HasField("json_name"):
            extra.append(("json_name", f"json_name = {quoted(field.json_name)}"))
        options = self.bracketed(self.options(field.options, key, extra))
        entry = _map_entry(message, field) if self.maps else None
        if entry is not None:
            key_type, value_type = self.type_of(entry.field[0]), self.type_of(entry.field[1])
            kind = f"map<{key_type}, {value_type}>"
            return f"{kind} {field.name} = {field.number}{options};".split("\n")
        line = f"{self.label(field)}{self.type_of(field)} {field.name} = {field.number}"
        return f"{line}{options};".split("\n")

    def default(self, field, key: tuple[str, str]) -> str:
        """A field's `default` as the reference writes it: a string quoted and escaped,
        an enum constant or a bool as is, a number as the file wrote it (its Layout; a
        descriptor's as protoc wrote it), normalized by its value (_plain). A bytes
        value is quoted with protoc's escapes: the reference writes it unquoted, which
        neither it nor protoc can read back."""
        value = field.default_value
        if field.type == FIELD.TYPE_STRING:
            return quoted(value)
        if field.type == FIELD.TYPE_BYTES:
            return f'"{value}"'
        if self.normalized and field.type in _NUMERIC:
            # a floating field's as a decimal: what protoc writes (`1e+20`) and what a
            # file writes (`1e20`) are, to the reference's createNumber
            decimal = field.type in (FIELD.TYPE_DOUBLE, FIELD.TYPE_FLOAT)
            try:
                return _plain(float(value) if decimal else int(value))
            except ValueError:
                return value
        if self.layout is not None:
            return self.layout.numbers.get(key, {}).get("default", value)
        return value

    def label(self, field) -> str:
        if field.label == FIELD.LABEL_REPEATED:
            return "repeated "
        if self.proto3:
            return "optional " if field.proto3_optional else ""
        if self._in_oneof(field):
            return ""
        return _LABELS[field.label] + " "

    @staticmethod
    def type_of(field) -> str:
        if field.type in _SCALAR_NAMES and not field.type_name:
            return _SCALAR_NAMES[field.type]
        return field.type_name

    def enum(self, enum, parent: str) -> list[str]:
        path = joined(parent, enum.name)
        values = list(enum.value)
        if self.normalized:
            values.sort(key=lambda v: (v.number, v.name))
        constants = []
        for value in values:
            key = ("value", joined(path, value.name))
            written = self.bracketed(self.options(value.options, key))
            constants.extend(f"{value.name} = {value.number}{written};".split("\n"))
        body = (
            self.reserved(enum.reserved_range, enum.reserved_name, 0, path)
            + [f"option {o};" for o in self.options(enum.options, ("enum", path))]
            + constants
        )
        return _block(f"enum {enum.name}", [body])

    def reserved(self, ranges, names, end_extra: int, path: str) -> list[str]:
        names = [quoted(n) for n in (sorted(names) if self.normalized else names)]
        return self.statements("reserved", self.range_texts(ranges, end_extra), names, path)

    def ranges(self, keyword: str, ranges, end_extra: int, path: str) -> list[str]:
        return self.statements(keyword, self.range_texts(ranges, end_extra), [], path)

    def range_texts(self, ranges, end_extra: int) -> list[str]:
        """`reserved` or `extensions` ranges (`end_extra`: a message's range ends past its
        last number in a descriptor, an enum's on it); normalized, sorted."""
        written = []
        for r in sorted(ranges, key=lambda r: r.start) if self.normalized else ranges:
            end = r.end - end_extra
            if end == r.start:
                written.append(str(r.start))
            else:
                written.append(f"{r.start} to {'max' if end >= _FIELD_MAX else end}")
        return written

    def statements(self, keyword: str, ranges: list[str], names: list[str], path: str):
        """`reserved` or `extensions` statements: grouped as the file grouped them (its
        Layout), else each value in a statement of its own, as the reference writes both
        a normalized schema and a descriptor."""
        grouping = self.layout.statements.get((keyword, path)) if self.layout else None
        if grouping is None:
            return [f"{keyword} {value};" for value in ranges + names]
        lines, ranges, names = [], iter(ranges), iter(names)
        for count, named in grouping:
            values = [next(ranges) for _ in range(count)] + [next(names) for _ in range(named)]
            lines.append(f"{keyword} {', '.join(values)};")
        return lines

    def extends(self, extensions, path: str) -> list[str]:
        """`extend` blocks: as the file wrote them (its Layout); else one block per
        extended type in the order they first come, each type named in full and its
        fields by number when normalized (the reference's toExtendElements and
        normalize)."""
        blocks: list[tuple[str, list]] = []
        grouping = self.layout.statements.get(("extend", path)) if self.layout else None
        if grouping is not None:
            fields = iter(extensions)
            for count, _ in grouping:
                block = [next(fields) for _ in range(count)]
                blocks.append((block[0].extendee if block else "", block))
        else:
            by_type: dict[str, list] = {}
            for field in extensions:
                by_type.setdefault(field.extendee, []).append(field)
            blocks = list(by_type.items())
        lines = []
        for extendee, fields in blocks:
            written = [
                line
                for f in self.ordered(fields)
                for line in self.field(_NO_MESSAGE, f, path, "extension")
            ]
            lines.extend(_block(f"extend {extendee}", [written]))
        return lines

    def service(self, service) -> list[str]:
        rpcs = []
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            head = f"rpc {method.name} ({request}) returns ({response})"
            options = self.options(method.options, ("method", joined(service.name, method.name)))
            if options:
                rpcs.append(head + " {")
                rpcs.extend(_INDENT + line for o in options for line in f"option {o};".split("\n"))
                rpcs.append("};")
            else:
                rpcs.append(head + ";")
        options = self.options(service.options, ("service", service.name))
        sections = [[f"option {o};" for o in options], rpcs]
        return _block(f"service {service.name}", sections)


def _merged(existing, replacement):
    """Two values of one extension's options merged as the reference merges them
    (ProtobufSchema.merge): message literals field by field, a field set by both
    becoming the list of their values; otherwise the later value wins."""
    if not (
        isinstance(existing, ast.MessageLiteral) and isinstance(replacement, ast.MessageLiteral)
    ):
        return replacement
    fields: dict[str, object] = {}
    for field in [*existing.elements, *replacement.elements]:
        if field.name not in fields:
            fields[field.name] = field.value
            continue
        values = []
        for value in (fields[field.name], field.value):
            for one in value if isinstance(value, list) else [value]:
                if one not in values:
                    values.append(one)
        fields[field.name] = values
    return ast.MessageLiteral([ast.MessageLiteralField(k, v) for k, v in fields.items()])


def _block(head: str, sections: list[list[str]]) -> list[str]:
    """`head {`, the sections indented with a blank line between two, and `}`; `head {}`
    when there are none (the reference's layout)."""
    sections = [[line for text in s for line in text.split("\n")] for s in sections if s]
    if not sections:
        return [f"{head} {{}}"]
    lines = [f"{head} {{"]
    for n, section in enumerate(sections):
        if n:
            lines.append("")
        lines.extend(_INDENT + line if line else "" for line in section)
    lines.append("}")
    return lines


def _indented(text: str) -> str:
    return "\n".join(_INDENT + line if line else "" for line in text.split("\n"))


def _map_entry(message, field):
    if field.label != FIELD.LABEL_REPEATED or not field.type_name:
        return None
    name = _last(field.type_name)
    return next((n for n in message.nested_type if n.name == name and n.options.map_entry), None)


def _last(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


_WIDE = Context(prec=400, rounding=ROUND_HALF_EVEN)  # every double's digits, and three decimals
_THOUSANDTH = Decimal("0.001")


def _plain(value: int | float) -> str:
    """A number as the reference normalizes one: commons-lang's createNumber reads it (an
    integer as it is; a decimal as a float when the float writes as the same shortest
    decimal as the double, else as the double) and DecimalFormat writes it (no grouping
    or exponent, at most three decimals rounded half-even from the exact binary value, a
    negative zero's sign kept); `inf` and `nan`, which createNumber refuses, as they
    are."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return _special(value)
    single = _as_float(value)
    exact = Decimal(value if single is None else single)
    written = f"{_WIDE.quantize(exact, _THOUSANDTH):f}"
    return written.rstrip("0").rstrip(".")


def _as_float(value: float) -> float | None:
    """The value as a 32-bit float when createNumber would take it as one: the float is
    finite, not zero for a value that is not, and its shortest decimal is the
    double's."""
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return None
    if single == 0 and value != 0:
        return None
    for digits in range(1, 10):
        shortest = f"{single:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(shortest)))[0] == single:
            return single if Decimal(shortest) == Decimal(repr(value)) else None
    return None


def _special(value: float) -> str:
    """`inf`, `-inf`, `nan` (`-nan`, as protoc reads a negated one) as .proto text
    writes them."""
    if value != value:
        return "-nan" if math.copysign(1, value) < 0 else "nan"
    return "inf" if value > 0 else "-inf"
