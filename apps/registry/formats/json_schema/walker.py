"""The walker: two schemas compared together, one sub-schema pair at a time. The rules
for objects, arrays and combinators are its mixins; the plumbing, the dispatch of one
pair and the rules for single keywords are here."""

from __future__ import annotations

from fractions import Fraction

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.arrays import _ArrayRules
from apps.registry.formats.json_schema.combinators import _CombinatorRules
from apps.registry.formats.json_schema.kinds import _BOUND_KINDS, _TEMPLATES
from apps.registry.formats.json_schema.objects import _ObjectRules
from apps.registry.formats.json_schema.refs import _collect, _is_draft7, _pointer, _remote_reason
from apps.registry.formats.json_schema.vocabulary import (
    _ANNOTATIONS,
    _ARRAY,
    _BOUND,
    _COMBINATORS,
    _COMBINED,
    _CONDITIONAL,
    _EMPTY,
    _ENUM,
    _GROUP,
    _MISSING,
    _MULTIPLE,
    _NO_NAMES,
    _NOT,
    _NOT_MERGED,
    _NOTHING,
    _OBJECT,
    _PATTERN,
    _VALIDATING,
    MAX_DEPTH,
    MAX_REF_HOPS,
    MAX_REPEATS,
    MAX_WORK,
    _count,
    _covered,
    _only_combinator,
    _presence_kind,
    _show,
    _show_shape,
    _show_types,
    _type_set,
    _values,
)
from apps.registry.formats.loader import json_type_name
from apps.registry.formats.verdicts import Difference


class _State:
    """Budget and depth, shared by a walker and its mirror image (used for `not`)."""

    __slots__ = ("left", "depth", "repeats")

    def __init__(self):
        self.left = MAX_WORK
        self.depth = 0
        self.repeats = MAX_REPEATS


class _Walker(_ObjectRules, _ArrayRules, _CombinatorRules):
    """Compares two schemas; data written with the first is read with the second."""

    __slots__ = (
        "roots",
        "draft7",
        "allowed",
        "labels",
        "state",
        "memo",
        "active",
        "path",
        "out",
        "derefs",
        "anchors",
        "keep",
        "views",
        "uniques",
        "sets",
        "mirror",
    )

    def __init__(self, original, update, allowed, labels, state, path=None):
        self.roots = (original, update)
        self.draft7 = (_is_draft7(original), _is_draft7(update))
        self.allowed = allowed
        self.labels = labels
        self.state = state
        self.memo: dict = {}  # (id, id) -> (path where compared, differences found)
        self.active: set = set()  # pairs being compared, to cut recursion
        self.path: list = [] if path is None else path
        self.out: list = []
        self.derefs = ({}, {})  # per side: id($ref node) -> resolved schema
        self.anchors: list = [None, None]
        self.keep: list = []  # synthetic schemas whose ids are memo keys
        self.views: dict = {}
        self.uniques: dict = {}
        self.sets: dict = {}  # id(node or list) -> its enum values / required names
        self.mirror = None

    # ------------------------------------------------------------------ plumbing

    def walk(self, o, u):
        state = self.state
        state.left -= 1
        if state.left < 0:
            raise SchemaTooComplex(
                f"comparing the schemas takes more than {MAX_WORK} steps of work"
            )
        if type(o) is dict:
            if "$ref" in o or "$dynamicRef" in o:
                o = self._deref(o, 0)
                if o is False:
                    return
        elif o is True:
            o = _EMPTY
        elif o is False:
            return
        else:
            raise InvalidSchema(f"not a schema at {self._where()}: {json_type_name(o)}")
        if type(u) is dict:
            if "$ref" in u or "$dynamicRef" in u:
                u = self._deref(u, 1)
        elif u is True:
            u = _EMPTY
        elif u is not False:
            raise InvalidSchema(f"not a schema at {self._where()}: {json_type_name(u)}")
        if o is u:
            return
        key = (id(o), id(u))
        cached = self.memo.get(key)
        if cached is not None:
            if cached[1]:
                self._repeat(*cached)
            return
        active = self.active
        if key in active:  # met again inside itself: assume compatible (coinduction)
            return
        state.depth += 1
        if state.depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schemas nest deeper than {MAX_DEPTH} levels")
        active.add(key)
        out = self.out
        start = len(out)
        self._compare(o, u)
        active.discard(key)
        state.depth -= 1
        if len(out) == start:
            self.memo[key] = _NOTHING
        else:
            found = out[start:]
            found = tuple(dict.fromkeys(found)) if len(found) > 1 else tuple(found)
            self.memo[key] = (self._where(), found)

    def _repeat(self, where, found):
        """Report a pair compared before, at the place it is met now.

        A sub-schema shared through $ref may be met at exponentially many places; past
        MAX_REPEATS the differences stay at the place they were first found.
        """
        self._spend(len(found))
        here = self._where()
        state = self.state
        if here == where or state.repeats < len(found):
            self.out.extend(found)
            return
        state.repeats -= len(found)
        cut = 1 if where == "#" else len(where)
        for d in found:
            path = d.path
            if where == "#" or path == where or path.startswith(where + "/"):
                d = Difference(d.kind, here + path[cut:], d.message)
            self.out.append(d)

    def _try(self, o, u):
        """Compare aside; answer whether the policy allows everything found, and what."""
        saved = self.out
        self.out = found = []
        self.walk(o, u)
        self.out = saved
        allowed = self.allowed
        for d in found:
            if d.kind not in allowed:
                return False, found
        return True, found

    def _spend(self, units=1):
        state = self.state
        state.left -= units
        if state.left < 0:
            raise SchemaTooComplex(
                f"comparing the schemas takes more than {MAX_WORK} steps of work"
            )

    def _where(self, segment=None) -> str:
        path = self.path
        if segment is not None:
            return "#/" + "/".join(path) + "/" + segment if path else "#/" + segment
        return "#/" + "/".join(path) if path else "#"

    def _emit(self, kind, segment=None, a=None, b=None, detail=None):
        self._spend()
        o_label, u_label = self.labels
        message = _TEMPLATES[kind].format(o=o_label, u=u_label, a=a, b=b)
        if detail:
            message = f"{message[:-1]} ({detail})."
        self.out.append(Difference(kind, self._where(segment), message))

    def _detail(self, found):
        for d in found:
            if d.kind not in self.allowed:
                return f"{d.kind} at {d.path}"
        return None

    def _keep_or_report(self, o, u, kind, segment=None, **emit) -> bool:
        """Compare aside: the differences found stand either way, as the reference's do, so
        LENIENT still refuses a type change inside what it would otherwise let pass; when
        the policy does not allow them all, `kind` is reported too, naming the first it
        does not. Whether allowed."""
        ok, found = self._try(o, u)
        self.out.extend(found)
        if not ok:
            self._emit(kind, segment, detail=self._detail(found), **emit)
        return ok

    def _first_allowed(self, pairs, kind) -> bool:
        """The first (original, update) pairing the policy allows stands, with `kind`."""
        for o, u in pairs:
            ok, found = self._try(o, u)
            if ok:
                self.out.extend(found)
                self._emit(kind)
                return True
        return False

    def _all_allowed(self, pairs, partly_kind) -> bool:
        """Every (original, update) pairing allowed: their differences stand; only some:
        `partly_kind`; none: False."""
        collected, matched = [], 0
        for o, u in pairs:
            ok, found = self._try(o, u)
            if ok:
                matched += 1
                collected.extend(found)
        if matched == len(pairs):
            self.out.extend(collected)
            return True
        if matched:
            self._emit(partly_kind)
            return True
        return False

    def _res(self, node, side):
        """The schema a node stands for: $ref followed, `true` as the empty schema."""
        if type(node) is dict:
            if "$ref" in node or "$dynamicRef" in node:
                return self._deref(node, side)
            return node
        if node is True:
            return _EMPTY
        return node

    def _deref(self, node, side, hops=0):
        cache = self.derefs[side]
        hit = cache.get(id(node))
        if hit is None:
            hit = cache[id(node)] = self._follow(node, side, hops)
        return hit

    def _follow(self, node, side, hops):
        self._spend()
        ref = node.get("$ref")
        if ref is None:
            ref = node.get("$dynamicRef")
        if type(ref) is not str:
            raise InvalidSchema(f"$ref at {self._where()} is not a string")
        if not ref.startswith("#"):
            raise InvalidSchema(_remote_reason(ref, self._where()))
        target = _pointer(self.roots[side], ref, lambda: self._anchors(side))
        if type(target) is dict and ("$ref" in target or "$dynamicRef" in target):
            if hops >= MAX_REF_HOPS:
                raise InvalidSchema(f"$ref {ref!r} at {self._where()} is circular")
            target = self._deref(target, side, hops + 1)
        elif target is True:
            target = _EMPTY
        elif type(target) is not dict and target is not False:
            raise InvalidSchema(f"$ref {ref!r} at {self._where()} does not point at a schema")
        if len(node) > 1 and target is not False:
            # 2020-12 applies a $ref's siblings too; Draft 7 ignores all but annotations
            draft7 = self.draft7[side]
            extra = [k for k in node if k not in _NOT_MERGED and not (draft7 and k in _VALIDATING)]
            if extra:
                merged = dict(target)
                for k in extra:
                    merged[k] = node[k]
                self.keep.append(merged)
                target = merged
        return target

    def _anchors(self, side):
        found = self.anchors[side]
        if found is None:
            found = self.anchors[side] = _collect(self.roots[side], check=False)[1]
        return found

    def _mirror(self):
        """The same comparison the other way round: data written with `update`."""
        if self.mirror is None:
            o_root, u_root = self.roots
            mirror = _Walker(u_root, o_root, self.allowed, self.labels[::-1], self.state, self.path)
            mirror.mirror = self
            self.mirror = mirror
        return self.mirror

    # ------------------------------------------------------------------ one pair

    def _compare(self, o, u):
        if u is False:
            self._emit("TYPE_CHANGED", a=_show_types(o.get("type")), b="nothing (false)")
            return
        for keyword, kind in _ANNOTATIONS:
            a = o.get(keyword, _MISSING)
            b = u.get(keyword, _MISSING)
            if a is not b and (a != b or type(a) is not type(b)):
                self._emit(kind, a=_show(a), b=_show(b))
        if _VALIDATING.isdisjoint(u):
            if not _VALIDATING.isdisjoint(o):
                self._emit("SCHEMA_REMOVED")
            return
        if _VALIDATING.isdisjoint(o):
            self._emit("SCHEMA_ADDED")
            return
        o_only = _only_combinator(o)
        u_only = _only_combinator(u)
        if o_only is not None or u_only is not None:
            if o_only is not None and u_only is not None:
                self._combined(o_only, o[o_only], u_only, u[u_only])
                return
            if u_only is not None:
                settled = self._into_combined(o, u_only, u[u_only])
            else:
                settled = self._from_combined(o_only, o[o_only], u)
            if not settled:
                self._emit("TYPE_CHANGED", a=_show_shape(o), b=_show_shape(u))
            return
        ot = o.get("type")
        ut = u.get("type")
        if (ot is not None or ut is not None) and ot != ut and self._types(ot, ut):
            return
        groups = 0
        for k in o:
            g = _GROUP.get(k)
            if g is not None:
                if g == _BOUND:
                    self._bound(k, o[k], u.get(k))
                else:
                    groups |= g
        for k in u:
            g = _GROUP.get(k)
            if g is not None:
                if g == _BOUND:
                    if k not in o:
                        self._bound(k, None, u[k])
                else:
                    groups |= g
        if not groups:
            return
        if groups & _ENUM:
            self._enum(o, u)
        if groups & _PATTERN:
            self._pattern(o, u)
        if groups & _MULTIPLE:
            self._multiple_of(o, u)
        if groups & _OBJECT:
            self._object(o, u)
        if groups & _ARRAY:
            self._array(o, u)
        if groups & _COMBINED:
            for crit in _COMBINATORS:
                a = o.get(crit)
                b = u.get(crit)
                if a is not None and b is not None:
                    self._combined(crit, a, crit, b)
                elif a is not None:
                    kind = "PRODUCT_TYPE_NARROWED" if crit == "allOf" else "SUM_TYPE_EXTENDED"
                    self._emit(kind, crit)
                elif b is not None:
                    kind = "PRODUCT_TYPE_EXTENDED" if crit == "allOf" else "SUM_TYPE_NARROWED"
                    self._emit(kind, crit)
        if groups & _NOT:
            self._not(o, u)
        if groups & _CONDITIONAL:
            self._conditional(o, u)

    def _types(self, ot, ut) -> bool:
        """Compare `type`; True when the types are unrelated and nothing else matters."""
        o_types = _type_set(ot)
        u_types = _type_set(ut)
        if o_types == u_types:
            return False
        a, b = _show_types(ot), _show_types(ut)
        if u_types is None:
            self._emit("TYPE_EXTENDED", a=a, b=b)
        elif o_types is None:
            self._emit("TYPE_NARROWED", a=a, b=b)
        elif all(_covered(t, u_types) for t in o_types):
            self._emit("TYPE_EXTENDED", a=a, b=b)
        elif all(_covered(t, o_types) for t in u_types):
            self._emit("TYPE_NARROWED", a=a, b=b)
        else:
            self._emit("TYPE_CHANGED", a=a, b=b)
            return True
        return False

    def _bound(self, keyword, a, b):
        if a == b and a is not None:
            return
        added, removed, increased, decreased = _BOUND_KINDS[keyword]
        if a is None:
            kind = added
        elif b is None:
            kind = removed
        elif b > a:
            kind = increased
        else:
            kind = decreased
        self._emit(kind, keyword, a=_show(a), b=_show(b))

    def _enum(self, o, u):
        a, a_keyword = self._values(o)
        b, b_keyword = self._values(u)
        if a == b:
            return
        segment = b_keyword or a_keyword
        if b is None:
            self._emit("ENUM_ARRAY_EXTENDED", segment, b="no restriction at all")
        elif a is None:
            self._emit("ENUM_ARRAY_NARROWED", segment, a=f"only {_count(b)}")
        elif b > a:
            self._emit("ENUM_ARRAY_EXTENDED", segment, b=f"{_count(b - a)} more")
        elif a > b:
            self._emit("ENUM_ARRAY_NARROWED", segment, a=f"{_count(a - b)} fewer")
        else:
            self._emit("ENUM_ARRAY_CHANGED", segment, a=len(a - b), b=len(b - a))

    def _values(self, node):
        hit = self.sets.get(id(node))
        if hit is None:
            hit = self.sets[id(node)] = _values(node)
            if hit[0]:
                self._spend(len(hit[0]) // 16)
        return hit

    def _names(self, names):
        """A required list as a set, built once per list."""
        if not names:
            return _NO_NAMES
        hit = self.sets.get(id(names))
        if hit is None:
            hit = self.sets[id(names)] = frozenset(n for n in names if type(n) is str)
            self.keep.append(names)
            self._spend(len(hit) // 16)
        return hit

    def _pattern(self, o, u):
        a = o.get("pattern")
        b = u.get("pattern")
        if a != b:
            kind = _presence_kind(a, b, "PATTERN_ADDED", "PATTERN_REMOVED") or "PATTERN_CHANGED"
            self._emit(kind, "pattern", a=_show(a), b=_show(b))

    def _multiple_of(self, o, u):
        a = o.get("multipleOf")
        b = u.get("multipleOf")
        if a == b:
            return
        kind = _presence_kind(a, b, "MULTIPLE_OF_ADDED", "MULTIPLE_OF_REMOVED")
        if kind is None:
            try:
                fa, fb = Fraction(str(a)), Fraction(str(b))
                if fa == fb:
                    return
                if fb % fa == 0:
                    kind = "MULTIPLE_OF_EXPANDED"
                elif fa % fb == 0:
                    kind = "MULTIPLE_OF_REDUCED"
                else:
                    kind = "MULTIPLE_OF_CHANGED"
            except (ValueError, ZeroDivisionError, TypeError):
                kind = "MULTIPLE_OF_CHANGED"
        self._emit(kind, "multipleOf", a=_show(a), b=_show(b))
