"""A .proto file's string literals: read as protoc reads their escapes, and written as
the reference registry (and, for a bytes default, protoc) writes them."""

from __future__ import annotations

import re

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
