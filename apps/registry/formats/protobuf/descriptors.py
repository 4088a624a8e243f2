"""A `.proto` file as protobuf's own `FileDescriptorProto`: read from its text (through
`proto-schema-parser`, a pure-Python parser of proto2 and proto3) or from the base64 of a
serialized descriptor (what `confluent-kafka`'s ProtobufSerializer registers), then built
in a descriptor pool of its own with the files it imports, which resolves every type name
and refuses what protoc refuses (an unknown type, a number used twice, a name defined
twice). Nothing is fetched: an import is one of the schema's references, or one of the
well-known types protobuf ships."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from functools import lru_cache

from antlr4 import CommonTokenStream, InputStream
from antlr4.error.ErrorListener import ErrorListener
from google.protobuf import (
    any_pb2,
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    source_context_pb2,
    struct_pb2,
    text_format,
    timestamp_pb2,
    type_pb2,
    unknown_fields,
    wrappers_pb2,
)
from google.protobuf.message import DecodeError
from proto_schema_parser import ast
from proto_schema_parser.antlr.ProtobufLexer import ProtobufLexer
from proto_schema_parser.antlr.ProtobufParser import ProtobufParser
from proto_schema_parser.parser import _ASTConstructor

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex

FDP = descriptor_pb2.FileDescriptorProto
FIELD = descriptor_pb2.FieldDescriptorProto
MAIN = "default"  # the name confluent-kafka gives the file of the schema itself
MAX_TEXT = 1_000_000  # characters of one schema's text
MAX_DEPTH = 64  # nested message declarations

# The files protobuf ships: a schema imports them without a reference, as the reference
# registry and confluent-kafka's serializers take them as given.
WELL_KNOWN = {
    module.DESCRIPTOR.name: module.DESCRIPTOR.serialized_pb
    for module in (
        any_pb2,
        api_pb2,
        descriptor_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        source_context_pb2,
        struct_pb2,
        timestamp_pb2,
        type_pb2,
        wrappers_pb2,
    )
}
SCALARS = {
    "double": FIELD.TYPE_DOUBLE,
    "float": FIELD.TYPE_FLOAT,
    "int64": FIELD.TYPE_INT64,
    "uint64": FIELD.TYPE_UINT64,
    "int32": FIELD.TYPE_INT32,
    "fixed64": FIELD.TYPE_FIXED64,
    "fixed32": FIELD.TYPE_FIXED32,
    "bool": FIELD.TYPE_BOOL,
    "string": FIELD.TYPE_STRING,
    "bytes": FIELD.TYPE_BYTES,
    "uint32": FIELD.TYPE_UINT32,
    "sfixed32": FIELD.TYPE_SFIXED32,
    "sfixed64": FIELD.TYPE_SFIXED64,
    "sint32": FIELD.TYPE_SINT32,
    "sint64": FIELD.TYPE_SINT64,
}
_LABELS = {
    ast.FieldCardinality.REQUIRED: FIELD.LABEL_REQUIRED,
    ast.FieldCardinality.OPTIONAL: FIELD.LABEL_OPTIONAL,
    ast.FieldCardinality.REPEATED: FIELD.LABEL_REPEATED,
}
_FIELD_MAX = 536_870_911  # the largest field number: `max` in a reserved range
_ENUM_MAX = 2_147_483_647
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+\Z")


class _Raise(ErrorListener):
    """proto-schema-parser reports syntax errors to stderr and goes on: the first one
    refuses the schema instead."""

    def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802
        raise InvalidSchema(f"not a .proto file: line {line}:{column}: {msg}")


def _quiet(target):
    target.removeErrorListeners()
    target.addErrorListener(_Raise())


@dataclasses.dataclass(frozen=True, repr=False)
class Number:
    """A number literal of a .proto file: its token as written (`0x10`, `1e10`, `-.5`),
    which the reference writes back (wire keeps a number's text), and its value as protoc
    reads it (`010` is 8). Two are the same when they are written alike."""

    text: str
    value: int | float = dataclasses.field(compare=False)

    def __repr__(self) -> str:  # in a refusal's reason, and str(): as written
        return self.text

    @classmethod
    def read(cls, text: str, integer: bool) -> Number:
        digits = text.removeprefix("-")
        if not integer:
            value = float(digits)  # `1e10`, `.5`, `5.`, `inf`, `nan`
        elif digits[:2] in ("0x", "0X"):
            value = int(digits, 16)
        elif digits[:1] == "0" and len(digits) > 1:
            value = int(digits, 8)
        else:
            value = int(digits)
        return cls(text, -value if text.startswith("-") else value)


class _Tree(_ASTConstructor):
    """proto-schema-parser's tree, a number literal read as a Number (the parser's own
    reads `1e10` as a float, and hands `0x10` as a string a quoted value is too)."""

    def visitScalarValue(self, ctx):  # noqa: N802
        for literal, integer in (
            (ctx.intLiteral(), True),
            (ctx.floatLiteral(), False),
            (ctx.specialFloatLiteral(), False),
        ):
            if literal is not None:
                text = "".join(child.getText() for child in literal.getChildren())
                return Number.read(text, integer)
        return super().visitScalarValue(ctx)


def _parse(text: str) -> ast.File:
    lexer = ProtobufLexer(InputStream(text))
    _quiet(lexer)
    parser = ProtobufParser(CommonTokenStream(lexer))
    _quiet(parser)
    return _Tree().visit(parser.file_())


class Layout:
    """What a .proto file's text says that its descriptor cannot, and the reference
    registry writes back as the file has it: how its `reserved` and `extensions`
    statements group their values, the order its options were written in, standard
    and custom interleaved, and how it spelt its numbers.

    Keys name an element by kind and dotted path inside the file (`("message",
    "Order.Line")`, `("field", "Order.Line.sku")`, `("file", "")`); text.py walks the
    descriptor with the same keys."""

    __slots__ = ("numbers", "options", "statements")

    def __init__(self):
        # an element's options as written: a standard option's name, or the index of a
        # custom one among the element's uninterpreted_option
        self.options: dict[tuple[str, str], list[str | int]] = {}
        # the tokens of an element's numbers as written (its descriptor keeps their
        # values): a custom option's by its index, a field's `default` as "default"
        self.numbers: dict[tuple[str, str], dict[int | str, str]] = {}
        # ("reserved" | "extensions", path): (ranges, names) of each statement in turn
        self.statements: dict[tuple[str, str], list[tuple[int, int]]] = {}


def file_proto(text: str) -> FDP:
    """The schema's text (a .proto file, or the base64 of a serialized
    FileDescriptorProto) as a descriptor named MAIN, its type names as written."""
    return parse_file(text)[0]


def parse_file(text: str) -> tuple[FDP, Layout | None]:
    """file_proto() with the file's Layout (None for a serialized descriptor, which
    knows none)."""
    if not isinstance(text, str):
        raise InvalidSchema("a Protobuf schema is the text of a .proto file")
    if len(text) > MAX_TEXT:
        raise SchemaTooComplex(f"the schema is longer than {MAX_TEXT} characters")
    decoded = _from_base64(text)
    if decoded is not None:
        decoded.name = MAIN
        return decoded, None
    try:
        tree = _parse(text)
    except RecursionError:
        raise SchemaTooComplex("the .proto file nests too deeply") from None
    except InvalidSchema:
        raise
    except Exception as exc:  # the parser's own refusals of what its grammar took
        raise InvalidSchema(f"not a .proto file: {exc}") from None
    try:
        built = _File(tree)
    except (ValueError, TypeError, OverflowError) as exc:  # a number past protobuf's range
        raise InvalidSchema(f"not a valid .proto file: {str(exc)[:200]}") from None
    return built.proto, built.layout


def _from_base64(text: str) -> FDP | None:
    """The descriptor a base64 text holds, or None when the text is not one: a .proto
    file always holds a character base64 does not (a space, `;` or `"`)."""
    stripped = text.strip()
    if not stripped or not _BASE64.match(stripped) or " " in stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=False)
        proto = FDP()
        proto.ParseFromString(raw)
    except (binascii.Error, DecodeError, ValueError):
        return None
    if not (proto.message_type or proto.enum_type or proto.service or proto.package):
        return None
    return proto


def resolved(proto: FDP, dependencies: dict[str, FDP]) -> dict[str, FDP]:
    """The descriptor built with the files it imports (`dependencies`: name: descriptor,
    transitively, the well-known types aside), every type name resolved in full: each
    file by name, the schema's own as MAIN. A schema protoc would refuse is an
    InvalidSchema."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, chain: tuple = ()) -> None:
        if name in added:
            return
        if name in chain:
            raise InvalidSchema(f"the imports of {name!r} go round in a circle")
        if name in WELL_KNOWN:
            pool.AddSerializedFile(WELL_KNOWN[name])
            added.add(name)
            return
        file = proto if name == MAIN else dependencies.get(name)
        if file is None:
            raise InvalidSchema(f'import "{name}" is not one of the schema\'s references')
        for imported in file.dependency:
            add(imported, (*chain, name))
        _interpreted_options(file, pool)
        try:
            pool.Add(file)
        except (TypeError, ValueError) as exc:
            where = "the schema" if name == MAIN else f"the reference {name!r}"
            raise InvalidSchema(f"{where} is not valid: {_reason(exc)}") from None
        added.add(name)

    add(MAIN)
    files = {}
    for name in added:
        files[name] = FDP()
        pool.FindFileByName(name).CopyToProto(files[name])
        source = proto if name == MAIN else dependencies.get(name)
        if source is not None:
            _json_names_as_sent(files[name], source)
    return files


def _json_names_as_sent(built: FDP, source: FDP) -> None:
    """The pool gives every field the json_name protoc derives: only those the file or
    descriptor set are kept, as the reference's descriptors carry them (a text's written
    `json_name`, a descriptor's own)."""
    pairs = [(built.extension, source.extension)]
    messages = [(built.message_type, source.message_type)]
    while messages:
        built_messages, source_messages = messages.pop()
        for b, s in zip(built_messages, source_messages, strict=True):
            pairs.extend([(b.field, s.field), (b.extension, s.extension)])
            messages.append((b.nested_type, s.nested_type))
    for built_fields, source_fields in pairs:
        for b, s in zip(built_fields, source_fields, strict=True):
            if not s.HasField("json_name"):
                b.ClearField("json_name")


def _interpreted_options(proto: FDP, pool) -> None:
    """A serialized descriptor's custom options protoc interpreted (extension fields of
    its *Options, unknown to protobuf's own descriptor messages) read back through the
    extensions the files it imports define, and kept as options protoc has not
    interpreted (`(acme.rules) = { len: 8 }`), so that its text and its serialized form
    keep them; those whose definition Steward does not hold are dropped, as the
    reference drops them. Text never has any: its options are uninterpreted already."""
    for options in _options_of(proto):
        if not len(unknown_fields.UnknownFieldSet(options)):
            continue  # a text's options, or a descriptor's protobuf knows
        extensions = _extension_fields(options, pool)
        options.DiscardUnknownFields()  # what no definition names is not kept
        for field, value in extensions:
            values = value if field.is_repeated else [value]
            for one in values:
                kept = options.uninterpreted_option.add()
                kept.name.add(name_part=field.full_name, is_extension=True)
                _uninterpreted_value(kept, field, one)


def _extension_fields(options, pool) -> list:
    """The extension fields an options message's unknown fields are, for the extensions
    the pool knows."""
    try:
        kind = pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
    except KeyError:
        return []  # descriptor.proto not imported: no custom option is defined
    read = message_factory.GetMessageClass(kind).FromString(options.SerializeToString())
    return [(field, value) for field, value in read.ListFields() if field.is_extension]


def _uninterpreted_value(kept, field, value) -> None:
    if field.type == field.TYPE_MESSAGE:
        kept.aggregate_value = text_format.MessageToString(value, as_one_line=True)
    elif field.type == field.TYPE_ENUM:
        constant = field.enum_type.values_by_number.get(value)
        if constant is None:
            kept.positive_int_value = value  # a constant the enum does not name
        else:
            kept.identifier_value = constant.name
    elif isinstance(value, bool):
        kept.identifier_value = "true" if value else "false"
    elif isinstance(value, str):
        kept.string_value = value.encode("utf-8")
    elif isinstance(value, bytes):
        kept.string_value = value
    elif isinstance(value, float):
        kept.double_value = value
    elif value < 0:
        kept.negative_int_value = value
    else:
        kept.positive_int_value = value


def _options_of(proto: FDP):
    """Every options message of a file's elements."""
    yield proto.options
    for service in proto.service:
        yield service.options
        yield from (method.options for method in service.method)
    stack = [(proto.message_type, proto.enum_type, proto.extension)]
    while stack:
        messages, enums, extensions = stack.pop()
        yield from (field.options for field in extensions)
        for enum in enums:
            yield enum.options
            yield from (value.options for value in enum.value)
        for message in messages:
            yield message.options
            yield from (field.options for field in message.field)
            yield from (oneof.options for oneof in message.oneof_decl)
            stack.append((message.nested_type, message.enum_type, message.extension))


def _reason(exc: Exception) -> str:
    return str(exc).replace("Couldn't build proto file into descriptor pool: ", "")[:500]


class _File:
    """One parsed file's tree, written into a FileDescriptorProto."""

    def __init__(self, tree: ast.File):
        self.proto = FDP(name=MAIN)
        self.layout = Layout()
        if tree.edition is not None:
            raise InvalidSchema("Protobuf editions are not supported; use proto2 or proto3")
        self.syntax = tree.syntax or "proto2"
        if self.syntax not in ("proto2", "proto3"):
            raise InvalidSchema(f"unknown syntax {self.syntax!r}")
        # kept as declared (protoc leaves a proto2 file's out of its descriptor): the
        # reference writes a file's `syntax` back only when the file has one
        if tree.syntax is not None:
            self.proto.syntax = self.syntax
        for element in tree.file_elements:
            self._element(element)

    def _element(self, element) -> None:
        proto = self.proto
        if isinstance(element, ast.Package):
            if proto.package:
                raise InvalidSchema("the file declares two packages")
            proto.package = element.name
        elif isinstance(element, ast.Import):
            if element.public:
                proto.public_dependency.append(len(proto.dependency))
            if element.weak:
                proto.weak_dependency.append(len(proto.dependency))
            proto.dependency.append(element.name)
        elif isinstance(element, ast.Option):
            _option(proto.options, element, self.written("file", ""))
        elif isinstance(element, ast.Message):
            self._message(proto.message_type.add(), element, 1, "")
        elif isinstance(element, ast.Enum):
            self._enum(proto.enum_type.add(), element, "")
        elif isinstance(element, ast.Service):
            self._service(proto.service.add(), element)
        elif isinstance(element, ast.Extension):
            self._extend(proto.extension, element, "")

    def written(self, kind: str, path: str) -> _Written:
        """Where an element's options are recorded as written."""
        return _Written(self.layout, (kind, path))

    def statement(self, kind: str, path: str, ranges: int, names: int) -> None:
        self.layout.statements.setdefault((kind, path), []).append((ranges, names))

    def _message(self, message, tree: ast.Message, depth: int, parent: str) -> None:
        if depth > MAX_DEPTH:
            raise SchemaTooComplex(f"messages nest deeper than {MAX_DEPTH}")
        message.name = tree.name
        path = joined(parent, tree.name)
        optional: list = []  # proto3 `optional` fields, each with its synthetic oneof
        for element in tree.elements:
            self._member(message, element, depth, optional, None, path)
        for field in optional:
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=_synthetic_oneof(message, field.name))

    def _member(self, message, element, depth, optional, oneof, path: str) -> None:
        if isinstance(element, ast.Field):
            written = self.written("field", joined(path, element.name))
            field = _field(message.field.add(), element, self.syntax, written, oneof is not None)
            if oneof is not None:
                field.oneof_index = oneof
            elif field.proto3_optional:
                optional.append(field)
        elif isinstance(element, ast.MapField):
            _map_field(message, element, self.written("field", joined(path, element.name)))
        elif isinstance(element, ast.Group):
            self._group(message, element, depth, oneof, path)
        elif isinstance(element, ast.OneOf):
            index = len(message.oneof_decl)
            message.oneof_decl.add(name=element.name)
            written = self.written("oneof", joined(path, element.name))
            for member in element.elements:
                if isinstance(member, ast.Option):
                    _option(message.oneof_decl[index].options, member, written)
                else:
                    self._member(message, member, depth, optional, index, path)
        elif isinstance(element, ast.Message):
            self._message(message.nested_type.add(), element, depth + 1, path)
        elif isinstance(element, ast.Enum):
            self._enum(message.enum_type.add(), element, path)
        elif isinstance(element, ast.Reserved):
            _reserved(message.reserved_range, message.reserved_name, element, _FIELD_MAX, 1)
            self.statement("reserved", path, len(element.ranges), len(element.names))
        elif isinstance(element, ast.ExtensionRange):
            for start, end in _ranges(element.ranges, _FIELD_MAX, 1):
                message.extension_range.add(start=start, end=end)
            self.statement("extensions", path, len(element.ranges), 0)
        elif isinstance(element, ast.Option):
            _option(message.options, element, self.written("message", path))
        elif isinstance(element, ast.Extension):
            self._extend(message.extension, element, path)

    def _group(self, message, group: ast.Group, depth: int, oneof, path: str) -> None:
        if self.syntax == "proto3":
            raise InvalidSchema("groups are proto2 only")
        field = message.field.add(
            name=group.name.lower(),
            number=group.number,
            type=FIELD.TYPE_GROUP,
            type_name=group.name,
            label=_LABELS.get(group.cardinality, FIELD.LABEL_OPTIONAL),
        )
        if oneof is not None:
            field.oneof_index = oneof
        group_message = ast.Message(group.name, group.elements)
        self._message(message.nested_type.add(), group_message, depth + 1, path)

    def _extend(self, extensions, tree: ast.Extension, path: str) -> None:
        """An `extend` block's fields, each an extension of the type it names (a custom
        option's definition when that is one of google.protobuf's *Options)."""
        count = 0
        for element in tree.elements:
            if isinstance(element, ast.Group):
                raise InvalidSchema("groups in an `extend` block are not supported")
            if isinstance(element, ast.Field):
                written = self.written("extension", joined(path, element.name))
                field = _field(extensions.add(), element, self.syntax, written)
                field.extendee = tree.typeName
                if field.proto3_optional:  # protoc's label for it: optional, no oneof
                    field.ClearField("proto3_optional")
                count += 1
        self.statement("extend", path, count, 0)

    def _enum(self, enum, tree: ast.Enum, parent: str) -> None:
        enum.name = tree.name
        path = joined(parent, tree.name)
        for element in tree.elements:
            if isinstance(element, ast.EnumValue):
                value = enum.value.add(name=element.name, number=element.number)
                written = self.written("value", joined(path, element.name))
                for option in element.options:
                    _option(value.options, option, written)
            elif isinstance(element, ast.EnumReserved):
                _reserved(enum.reserved_range, enum.reserved_name, element, _ENUM_MAX, 0)
                self.statement("reserved", path, len(element.ranges), len(element.names))
            elif isinstance(element, ast.Option):
                _option(enum.options, element, self.written("enum", path))

    def _service(self, service, tree: ast.Service) -> None:
        service.name = tree.name
        for element in tree.elements:
            if isinstance(element, ast.Method):
                method = service.method.add(
                    name=element.name,
                    input_type=element.input_type.type,
                    output_type=element.output_type.type,
                )
                if element.input_type.stream:
                    method.client_streaming = True
                if element.output_type.stream:
                    method.server_streaming = True
                written = self.written("method", joined(tree.name, element.name))
                for option in element.elements:
                    if isinstance(option, ast.Option):
                        _option(method.options, option, written)
            elif isinstance(element, ast.Option):
                _option(service.options, element, self.written("service", tree.name))


def joined(parent: str, name: str) -> str:
    """An element's dotted path inside its file (a Layout key's second half)."""
    return f"{parent}.{name}" if parent else name


def _synthetic_oneof(message, name: str) -> str:
    """protoc's name for a proto3 optional field's oneof: `_name`, prefixed with `X`
    until no other oneof has it."""
    taken = {oneof.name for oneof in message.oneof_decl}
    chosen = f"_{name}"
    while chosen in taken:
        chosen = f"X{chosen}"
    return chosen


def _field(field, tree: ast.Field, syntax: str, written: _Written, in_oneof: bool = False):
    field.name, field.number = tree.name, tree.number
    if tree.type in SCALARS:
        field.type = SCALARS[tree.type]
    else:
        field.type_name = tree.type  # resolved by the pool, as protoc resolves it
    if tree.cardinality is None:
        if syntax == "proto2" and not in_oneof:
            raise InvalidSchema(f"field {tree.name!r}: a proto2 field needs a label")
        field.label = FIELD.LABEL_OPTIONAL
    else:
        if syntax == "proto3" and tree.cardinality == ast.FieldCardinality.REQUIRED:
            raise InvalidSchema(f"field {tree.name!r}: required fields are proto2 only")
        field.label = _LABELS[tree.cardinality]
        if syntax == "proto3" and tree.cardinality == ast.FieldCardinality.OPTIONAL:
            field.proto3_optional = True
    for option in tree.options:
        if option.name == "default":
            field.default_value = _default_text(option.value, field.type)
            written.number("default", option.value)
        elif option.name == "json_name":
            field.json_name = str(option.value)
        else:
            _option(field.options, option, written)
    return field


def _default_text(value, kind: int) -> str:
    """A `default` as protoc keeps it in a descriptor: a string's content unescaped, a
    bytes value C-escaped (the parser hands a literal with its escapes as written), a
    number by its value (the pool writes it as protoc does: `0x10` is 16; the token as
    written is in the Layout)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ast.Identifier):
        return value.name
    if isinstance(value, Number):
        return repr(value.value)
    if isinstance(value, str) and kind == FIELD.TYPE_STRING:
        return unescaped(value)
    if isinstance(value, str) and kind == FIELD.TYPE_BYTES:
        return c_escaped(unescaped(value))
    return str(value)


def _map_field(message, tree: ast.MapField, written: _Written) -> None:
    entry_name = "".join(part[:1].upper() + part[1:] for part in tree.name.split("_")) + "Entry"
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    for number, (name, kind) in enumerate((("key", tree.key_type), ("value", tree.value_type)), 1):
        field = entry.field.add(name=name, number=number, label=FIELD.LABEL_OPTIONAL)
        if kind in SCALARS:
            field.type = SCALARS[kind]
        else:
            field.type_name = kind
    field = message.field.add(
        name=tree.name, number=tree.number, label=FIELD.LABEL_REPEATED, type_name=entry_name
    )
    field.type = FIELD.TYPE_MESSAGE
    for option in tree.options:
        _option(field.options, option, written)


def _reserved(ranges, names, tree, largest: int, end_extra: int) -> None:
    """`end_extra`: a message's reserved range ends past its last number in a descriptor,
    an enum's on it."""
    for start, end in _ranges(tree.ranges, largest, end_extra):
        ranges.add(start=start, end=end)
    names.extend(tree.names)


def _ranges(ranges: list[str], largest: int, end_extra: int):
    for text in ranges:
        low, _, high = (part.strip() for part in str(text).partition(" to "))
        try:
            start = int(low, 0)
            end = largest if high == "max" else int(high or low, 0)
        except ValueError:
            raise InvalidSchema(f"not a number range: {text!r}") from None
        if end < start:
            raise InvalidSchema(f"range {text!r} ends before it starts")
        yield start, end + end_extra


class _Written:
    """Where one element's options are recorded as its text has them (its Layout): their
    order, and the tokens of their numbers."""

    __slots__ = ("layout", "key")

    def __init__(self, layout: Layout, key: tuple[str, str]):
        self.layout, self.key = layout, key

    def place(self, name: str | int) -> None:
        self.layout.options.setdefault(self.key, []).append(name)

    def number(self, slot: str | int, value) -> None:
        if isinstance(value, Number):
            self.layout.numbers.setdefault(self.key, {})[slot] = value.text


def _option(options, option: ast.Option, written: _Written) -> None:
    """A standard option set on its options message; a custom one (`(name)`) kept as
    protoc keeps an option it has not interpreted yet (`uninterpreted_option`): its
    meaning lives in an extension Steward does not keep, but the reference registry
    keeps it in the schema's text, and so does Steward (text.py writes it back).
    `written`: where the option's place among the element's others is recorded."""
    name = option.name
    if name.startswith("("):
        index = len(options.uninterpreted_option)
        written.place(index)
        written.number(index, option.value)
        _custom_option(options.uninterpreted_option.add(), name, option.value)
        return
    written.place(name)
    field = options.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise InvalidSchema(f"unknown option {name!r}")
    value = option.value
    try:
        if field.enum_type is not None:
            label = value.name if isinstance(value, ast.Identifier) else str(value)
            setattr(options, name, field.enum_type.values_by_name[label].number)
        elif field.type == field.TYPE_BOOL and not isinstance(value, bool):
            raise TypeError
        elif isinstance(value, Number):
            setattr(options, name, value.value)
        else:
            setattr(options, name, unescaped(value) if isinstance(value, str) else value)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InvalidSchema(f"option {name!r} cannot be {value!r}") from None


def _custom_option(kept, name: str, value) -> None:
    """A custom option written into an UninterpretedOption, as protoc records one: its
    name's parts (`(acme.rules).max` is the extension `acme.rules`, then its field
    `max`) and its value by kind; a message literal as its text."""
    for part, extension in _name_parts(name):
        kept.name.add(name_part=part, is_extension=extension)
    if isinstance(value, bool):
        kept.identifier_value = "true" if value else "false"
    elif isinstance(value, ast.Identifier):
        kept.identifier_value = value.name
    elif isinstance(value, Number) and isinstance(value.value, float):
        kept.double_value = value.value
    elif isinstance(value, Number) and value.value < 0:
        kept.negative_int_value = value.value
    elif isinstance(value, Number):
        kept.positive_int_value = value.value
    elif isinstance(value, str):
        kept.string_value = unescaped(value).encode("utf-8")
    elif isinstance(value, ast.MessageLiteral):
        kept.aggregate_value = aggregate_text(value)
    else:
        raise InvalidSchema(f"option {name!r} cannot be {value!r}")


def _name_parts(name: str) -> list[tuple[str, bool]]:
    parts, at = [], 0
    while at < len(name):
        if name[at] == "(":
            end = name.find(")", at)
            if end < 0:
                raise InvalidSchema(f"option {name!r} is not a name")
            parts.append((name[at + 1 : end], True))
            at = end + 1
        else:
            end = name.find(".", at)
            end = len(name) if end < 0 else end
            parts.append((name[at:end], False))
            at = end
        if name.startswith(".", at):
            at += 1
    if not parts or not all(part for part, _ in parts):
        raise InvalidSchema(f"option {name!r} is not a name")
    return parts


def aggregate_text(literal: ast.MessageLiteral) -> str:
    """A message literal as protobuf's text format, as protoc keeps an aggregate
    option's value (`a: 1 b: "x" c { d: true }`)."""
    return " ".join(_literal_field(field) for field in literal.elements)


def _literal_field(field) -> str:
    if isinstance(field.value, ast.MessageLiteral):
        return f"{field.name} {{ {aggregate_text(field.value)} }}".replace("{  }", "{}")
    return f"{field.name}: {_literal_value(field.value)}"


def _literal_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ast.Identifier):
        return value.name
    if isinstance(value, str):
        return quoted(unescaped(value))
    if isinstance(value, list):
        return "[" + ", ".join(_literal_value(v) for v in value) + "]"
    if isinstance(value, ast.MessageLiteral):
        return "{ " + aggregate_text(value) + " }"
    return str(value)  # a Number as written, as protoc keeps an aggregate's tokens


@lru_cache(maxsize=1024)
def aggregate_literal(text: str) -> ast.MessageLiteral:
    """An aggregate option's kept text read back into its message literal."""
    tree = _parse(f"option (x) = {{ {text} }};")
    return tree.file_elements[0].value


_ESCAPED = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def unescaped(text: str) -> str:
    """A string literal's content as the parser hands it (escapes as written) read as
    protoc reads it: `\\n`, `\\"`, `\\x41`, `\\101` and the rest."""

    def one(match) -> str:
        escape = match.group(1)
        if escape[0] in "xX":
            return chr(int(escape[1:], 16))
        if escape[0] in "01234567":
            return chr(int(escape, 8))
        return _SIMPLE.get(escape, escape)

    return _ESCAPED.sub(one, text)


# The escapes the reference registry writes a string option's value with.
_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
}


def c_escaped(text: str) -> str:
    """A bytes value as protoc keeps a bytes field's default (its CEscape): printable
    ASCII as is, `\\n \\r \\t \\" \\' \\\\` by name, any other byte in octal (a character
    an escape made stands for its byte, one written as is for its UTF-8)."""
    out = []
    for c in text:
        if c in "\n\r\t\"'\\":
            out.append(_ESCAPES[c])
        elif " " <= c <= "~":
            out.append(c)
        else:
            raw = bytes([ord(c)]) if ord(c) < 256 else c.encode("utf-8")
            out.extend(f"\\{byte:03o}" for byte in raw)
    return "".join(out)


def quoted(text: str | bytes) -> str:
    """A string as a .proto file writes it, quoted and escaped as the reference does."""
    if isinstance(text, bytes):  # a bytes value of a descriptor sent serialized
        text = text.decode("utf-8", "backslashreplace")
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'
