"""Schema resolution: what a reader reads of what a writer wrote, by the specification."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.registry.formats.avro.vocabulary import (
    _NAMED,
    _PROMOTIONS,
    MAX_REPORTED,
    MAX_WALK_DEPTH,
    MAX_WORK,
    PRIMITIVES,
    _branches,
    _show,
    _symbols,
)
from apps.registry.formats.errors import SchemaTooComplex
from apps.registry.formats.verdicts import Difference

if TYPE_CHECKING:
    from apps.registry.formats.avro import AvroSchema


def _can_read(reader: AvroSchema, writer: AvroSchema, labels) -> list[Difference]:
    walker = _Walker(labels)
    try:
        found = walker.pair(reader._root, writer._root)
    except RecursionError:
        raise SchemaTooComplex("the schemas nest too deeply to compare") from None
    return [Difference(kind, path or "/", message) for kind, path, message in found]


class _Walker:
    """Resolves a reader type against a writer type. Results are tuples of (kind, path
    relative to the pair, message), memoised per record pair and prefixed by the caller."""

    __slots__ = ("r", "w", "memo", "left", "depth")

    def __init__(self, labels):
        self.r, self.w = labels
        self.memo: dict = {}
        self.left = MAX_WORK
        self.depth = 0

    def pair(self, r, w) -> tuple:
        if r is w:
            return ()
        key = None
        if r.kind == "record" or w.kind == "record":
            key = (id(r), id(w))
            hit = self.memo.get(key)
            if hit is not None:
                return hit  # () while the pair is being compared: recursion assumes success
            self.memo[key] = ()
        self.left -= 1
        if self.left < 0:
            raise SchemaTooComplex(f"comparing the schemas takes more than {MAX_WORK} steps")
        self.depth += 1
        if self.depth > MAX_WALK_DEPTH:
            raise SchemaTooComplex(f"the schemas nest more than {MAX_WALK_DEPTH} types deep")
        try:
            found = self.resolve(r, w)
        finally:
            self.depth -= 1
        if len(found) > MAX_REPORTED:
            found = found[:MAX_REPORTED]
        if key is not None:
            self.memo[key] = found
        return found

    def resolve(self, r, w) -> tuple:
        rk, wk = r.kind, w.kind
        if wk == "union":
            return self.writer_union(r, w)
        if rk == "union":
            found = self.reader_union(r, w)
            if found is None:
                return (
                    (
                        "MISSING_UNION_BRANCH",
                        "",
                        f"The union of the {self.r} schema has no branch that reads the "
                        f"{_show(w)} the {self.w} schema writes.",
                    ),
                )
            return found
        if rk == wk:
            if rk in PRIMITIVES:
                return ()
            if rk == "array":
                return _prefixed("/items", self.pair(r.items, w.items))
            if rk == "map":
                return _prefixed("/values", self.pair(r.values, w.values))
            out = []
            if r.short != w.short and w.name not in r.aliases:
                out.append(
                    (
                        "NAME_MISMATCH",
                        "/name",
                        f"The {self.r} schema expects {rk} {r.name} where the {self.w} schema "
                        f"writes {rk} {w.name}, and neither the name nor an alias of "
                        f"{r.name} matches {w.name}.",
                    )
                )
            if rk == "record":
                out.extend(self.fields(r, w))
            elif rk == "enum":
                missing = [s for s in w.symbols if s not in r.symbol_set]
                if missing and r.default is None:
                    out.append(
                        (
                            "MISSING_ENUM_SYMBOLS",
                            "/symbols",
                            f"Enum {r.name} of the {self.r} schema lacks {_symbols(missing)}, "
                            f"which the {self.w} schema may write, and has no default symbol "
                            "to read them as.",
                        )
                    )
            elif r.size != w.size:
                out.append(
                    (
                        "FIXED_SIZE_MISMATCH",
                        "/size",
                        f"Fixed {r.name} holds {r.size} bytes in the {self.r} schema but "
                        f"{w.size} in the {self.w} schema.",
                    )
                )
            return tuple(out)
        if (rk, wk) in _PROMOTIONS:
            return ()
        return (
            (
                "TYPE_MISMATCH",
                "",
                f"The {self.r} schema expects {_show(r)} where the {self.w} schema writes "
                f"{_show(w)}, and {_show(w)} cannot be read as {_show(r)}.",
            ),
        )

    def fields(self, r, w) -> list:
        out = []
        writer_fields = w.by_name
        for field in r.fields:
            other = writer_fields.get(field.name)
            if other is None:
                for alias in field.aliases:
                    other = writer_fields.get(alias)
                    if other is not None:
                        break
            if other is None:
                if not field.has_default:
                    out.append(
                        (
                            "READER_FIELD_MISSING_DEFAULT_VALUE",
                            f"/fields/{field.pos}",
                            f"Field {field.name!r} of {r.name} in the {self.r} schema has no "
                            f"default, and the {self.w} schema has no field of that name or "
                            "of its aliases to fill it from.",
                        )
                    )
                continue
            found = self.pair(field.node, other.node)
            if found:
                out.extend(_prefixed(f"/fields/{field.pos}/type", found))
        return out

    def writer_union(self, r, w) -> tuple:
        """Data of any branch of the writer's union may come: each must be readable."""
        out: list = []
        unreadable = []
        if r.kind == "union":
            for n, branch in enumerate(w.branches):
                found = self.reader_union(r, branch)
                if found is None:
                    unreadable.append((n, branch))
                else:
                    out.extend(found)
            if unreadable:
                out.append(
                    (
                        "MISSING_UNION_BRANCH",
                        "",
                        f"The union of the {self.r} schema has no branch that reads "
                        f"{_branches(unreadable)} of the union of the {self.w} schema.",
                    )
                )
            return tuple(out)
        for n, branch in enumerate(w.branches):
            if branch.kind == r.kind or (r.kind, branch.kind) in _PROMOTIONS:
                out.extend(self.pair(r, branch))
            else:
                unreadable.append((n, branch))
        if unreadable:
            out.append(
                (
                    "TYPE_MISMATCH",
                    "",
                    f"The {self.r} schema expects {_show(r)} where the {self.w} schema writes "
                    f"a union, and its {_branches(unreadable)} cannot be read as {_show(r)}.",
                )
            )
        return tuple(out)

    def reader_union(self, r, w):
        """The reader's union reads `w` (not a union) with a branch that matches it, an
        exact one (same type, same full name) first. () when one reads it entirely, the
        first matching branch's differences when none does, None when no branch matches."""
        exact = []
        loose = []
        for n, branch in enumerate(r.branches):
            bk = branch.kind
            if bk == w.kind:
                if bk not in _NAMED or branch.name == w.name:
                    exact.append((n, branch))
                elif branch.short == w.short or w.name in branch.aliases:
                    loose.append((n, branch))
            elif (bk, w.kind) in _PROMOTIONS:
                loose.append((n, branch))
        best = None
        for n, branch in exact + loose:
            found = self.pair(branch, w)
            if not found:
                return ()
            if best is None:
                best = _prefixed(f"/{n}", found)
        return best


def _prefixed(prefix: str, found: tuple) -> tuple:
    if not found:
        return found
    return tuple((kind, prefix + path, message) for kind, path, message in found)
