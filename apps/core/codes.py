"""Stable error codes: each app declares its own in one enumeration.

A refusal's `code` is part of the API (the problem body's `code`, clients branch on
it), so every code is a member of one `Codes` enumeration, in the module `codes.py` of
the app that raises it, with a one-line meaning:

    class AssetCode(Codes):
        NOT_DELETABLE = "asset_not_deletable", "Only a draft asset can be deleted."

    raise InvalidTransition("...", code=AssetCode.NOT_DELETABLE)

A member is a `str`, so it compares, serialises and logs as its value. `all_codes()`
reads every app's enumeration; docs/errors.md is written from it (`make errors`) and a
test fails when it is out of date, or when a code is written as a literal outside
these enumerations.
"""

from __future__ import annotations

import enum
from importlib import import_module

from django.apps import apps


class Codes(enum.StrEnum):
    """The base of every app's enumeration of error codes."""

    meaning: str

    def __new__(cls, value: str, meaning: str = ""):
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


def all_codes() -> dict[str, list[Codes]]:
    """Every app's codes, by the app's label, in declaration order."""
    found: dict[str, list[Codes]] = {}
    for config in apps.get_app_configs():
        if not config.name.startswith("apps."):
            continue
        try:
            module = import_module(f"{config.name}.codes")
        except ModuleNotFoundError as missing:
            if missing.name != f"{config.name}.codes":
                raise
            continue
        for value in vars(module).values():
            declared_here = getattr(value, "__module__", None) == module.__name__
            if declared_here and isinstance(value, type) and issubclass(value, Codes):
                found.setdefault(config.label, []).extend(value)
    return found


def document() -> str:
    """docs/errors.md: every code a client may meet, by app, with its meaning."""
    lines = [
        "# Error codes",
        "",
        "Every refusal Steward's API answers is an `application/problem+json` body whose",
        "`code` is stable: clients branch on it. This page lists every code, by the app",
        "that raises it. It is written from the code (`make errors`), and a test fails",
        "when it is out of date.",
        "",
    ]
    for label, codes in sorted(all_codes().items()):
        lines += [f"## {label}", "", "| code | meaning |", "| --- | --- |"]
        lines += [f"| `{code.value}` | {code.meaning} |" for code in codes]
        lines.append("")
    return "\n".join(lines)
