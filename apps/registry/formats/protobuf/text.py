"""A FileDescriptorProto written as `.proto` text in the layout the reference registry
answers (Square Wire's `toSchema()`, which its `canonicalString()` uses): `syntax`,
`package`, the imports, the file's options, then each type with its reserved numbers,
options, fields, oneofs and nested types in that order, two-space indents. The same file
written twice is the same text, whatever spacing, comments or order of options it was
sent with.

`normalized=True` is the reference's `normalize`: every type named in full, imports and
options sorted, fields in number order; what Steward also takes as a schema's identity."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from apps.registry.formats.protobuf.descriptors import FDP, FIELD, SCALARS

_SCALAR_NAMES = {number: name for name, number in SCALARS.items()}
_LABELS = {
    FIELD.LABEL_OPTIONAL: "optional",
    FIELD.LABEL_REQUIRED: "required",
    FIELD.LABEL_REPEATED: "repeated",
}
_FIELD_MAX = 536_870_911
_ENUM_MAX = 2_147_483_647
_INDENT = "  "


def proto_text(proto: FDP, *, normalized: bool = False) -> str:
    writer = _Writer(proto, normalized)
    return writer.file()


class _Writer:
    def __init__(self, proto: FDP, normalized: bool):
        self.proto = proto
        self.normalized = normalized
        self.proto3 = proto.syntax == "proto3"

    def file(self) -> str:
        proto = self.proto
        head = [f'syntax = "{proto.syntax or "proto2"}";']
        if proto.package:
            head.append(f"package {proto.package};")
        parts = ["\n".join(head) + "\n"]
        imports = [
            ("public " if n in proto.public_dependency else "")
            + ("weak " if n in proto.weak_dependency else "")
            + f'"{name}"'
            for n, name in enumerate(proto.dependency)
        ]
        if imports:
            ordered = sorted(imports) if self.normalized else imports
            parts.append("".join(f"import {line};\n" for line in ordered))
        options = self.options(proto.options)
        if options:
            parts.append("".join(f"option {line};\n" for line in options))
        for message in proto.message_type:
            parts.append(self.block(self.message(message)))
        for enum in proto.enum_type:
            parts.append(self.block(self.enum(enum)))
        for service in proto.service:
            parts.append(self.block(self.service(service)))
        return "\n".join(parts)

    @staticmethod
    def block(lines: list[str]) -> str:
        return "\n".join(lines) + "\n"

    def options(self, options) -> list[str]:
        found = [f"{field.name} = {_value(field, value)}" for field, value in options.ListFields()]
        return sorted(found) if self.normalized else found

    def message(self, message) -> list[str]:
        lines = [f"message {message.name} {{"]
        hidden = {
            nested.name
            for nested in message.nested_type
            if nested.options.map_entry or self._group_of(message, nested.name)
        }
        sections = [
            self.reserved(message.reserved_range, message.reserved_name, _FIELD_MAX, 1),
            [f"option {line};" for line in self.options(message.options)],
            self.fields(message, [f for f in message.field if not self._in_oneof(message, f)]),
            self.oneofs(message),
            self.extensions(message),
            [
                line
                for nested in message.nested_type
                if nested.name not in hidden
                for line in self.message(nested)
            ]
            + [line for enum in message.enum_type for line in self.enum(enum)],
        ]
        return _body(lines, sections)

    @staticmethod
    def extensions(message) -> list[str]:
        written = []
        for r in message.extension_range:
            end = r.end - 1
            if end == r.start:
                written.append(str(r.start))
            else:
                written.append(f"{r.start} to {'max' if end == _FIELD_MAX else end}")
        return [f"extensions {', '.join(written)};"] if written else []

    @staticmethod
    def _in_oneof(message, field) -> bool:
        """Whether the field belongs to a written oneof (a proto3 optional field's
        synthetic oneof is written as `optional`)."""
        return field.HasField("oneof_index") and not field.proto3_optional

    @staticmethod
    def _group_of(message, name: str):
        return next(
            (f for f in message.field if f.type == FIELD.TYPE_GROUP and _last(f.type_name) == name),
            None,
        )

    def fields(self, message, fields) -> list[str]:
        if self.normalized:
            fields = sorted(fields, key=lambda f: f.number)
        lines = []
        for field in fields:
            lines.extend(self.field(message, field))
        return lines

    def oneofs(self, message) -> list[str]:
        lines = []
        for index, oneof in enumerate(message.oneof_decl):
            members = [
                f
                for f in message.field
                if f.HasField("oneof_index") and f.oneof_index == index and not f.proto3_optional
            ]
            if not members:
                continue  # a proto3 optional field's synthetic oneof
            lines.append(f"oneof {oneof.name} {{")
            lines.extend(f"{_INDENT}option {line};" for line in self.options(oneof.options))
            lines.extend(_INDENT + line for line in self.fields(message, members))
            lines.append("}")
        return lines

    def field(self, message, field) -> list[str]:
        label = self.label(message, field)
        options = self.field_options(field)
        if field.type == FIELD.TYPE_GROUP:
            group = next(n for n in message.nested_type if n.name == _last(field.type_name))
            body = self.message(group)[1:-1]
            return [f"{label}group {group.name} = {field.number}{options} {{", *body, "}"]
        entry = _map_entry(message, field)
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            kind = f"map<{self.type_of(key)}, {self.type_of(value)}>"
            return [f"{kind} {field.name} = {field.number}{options};"]
        return [f"{label}{self.type_of(field)} {field.name} = {field.number}{options};"]

    def label(self, message, field) -> str:
        if field.label == FIELD.LABEL_REPEATED:
            return "repeated "
        if self.proto3:
            return "optional " if field.proto3_optional else ""
        if self._in_oneof(message, field):
            return ""
        return _LABELS[field.label] + " "

    @staticmethod
    def type_of(field) -> str:
        if field.type in _SCALAR_NAMES and not field.type_name:
            return _SCALAR_NAMES[field.type]
        return field.type_name

    def field_options(self, field) -> str:
        found = []
        if field.HasField("default_value"):
            value = field.default_value
            if field.type in (FIELD.TYPE_STRING, FIELD.TYPE_BYTES):
                value = _quoted(value)
            found.append(f"default = {value}")
        if field.HasField("json_name") and field.json_name != _camel(field.name):
            found.append(f"json_name = {_quoted(field.json_name)}")
        found.extend(self.options(field.options))
        return f" [{', '.join(found)}]" if found else ""

    def enum(self, enum) -> list[str]:
        lines = [f"enum {enum.name} {{"]
        values = []
        for value in enum.value:
            options = self.options(value.options)
            written = f" [{', '.join(options)}]" if options else ""
            values.append(f"{value.name} = {value.number}{written};")
        sections = [
            self.reserved(enum.reserved_range, enum.reserved_name, _ENUM_MAX, 0),
            [f"option {line};" for line in self.options(enum.options)],
            values,
        ]
        return _body(lines, sections)

    def reserved(self, ranges, names, largest: int, end_extra: int) -> list[str]:
        lines = []
        if ranges:
            written = []
            for r in ranges:
                end = r.end - end_extra
                if end == r.start:
                    written.append(str(r.start))
                else:
                    written.append(f"{r.start} to {'max' if end == largest else end}")
            lines.append(f"reserved {', '.join(written)};")
        if names:
            lines.append(f"reserved {', '.join(_quoted(n) for n in names)};")
        return lines

    def service(self, service) -> list[str]:
        lines = [f"service {service.name} {{"]
        body = [f"option {line};" for line in self.options(service.options)]
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            options = self.options(method.options)
            head = f"rpc {method.name} ({request}) returns ({response})"
            if options:
                body.append(head + " {")
                body.extend(f"{_INDENT}option {line};" for line in options)
                body.append("}")
            else:
                body.append(head + ";")
        return _body(lines, [body])


def _body(lines: list[str], sections: list[list[str]]) -> list[str]:
    """The sections of a type's body, indented, a blank line between two (Wire's
    layout), and the closing brace."""
    first = True
    for section in sections:
        if section:
            if not first:
                lines.append("")
            first = False
            lines.extend(_INDENT + line if line else "" for line in section)
    lines.append("}")
    return lines


def _map_entry(message, field):
    if field.label != FIELD.LABEL_REPEATED or not field.type_name:
        return None
    name = _last(field.type_name)
    return next((n for n in message.nested_type if n.name == name and n.options.map_entry), None)


def _last(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _quoted(text: str | bytes) -> str:
    if isinstance(text, bytes):  # a bytes option of a descriptor sent serialized
        text = text.decode("utf-8", "backslashreplace")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _value(field, value) -> str:
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, bytes):
        return _quoted(value.decode("utf-8", "backslashreplace"))
    if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE:
        return "{ }"
    return str(value)
