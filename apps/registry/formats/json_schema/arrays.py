"""The walker's rules for arrays: items, tuples, contains, uniqueness."""

from __future__ import annotations

from apps.registry.formats.json_schema.vocabulary import _MISSING, _VALIDATING, _items_of


class _ArrayRules:
    """Mixed into the walker: arrays."""

    __slots__ = ()

    def _array(self, o, u):
        path = self.path
        o_tuple, o_tuple_kw, o_rest, o_rest_kw = _items_of(o)
        u_tuple, u_tuple_kw, u_rest, u_rest_kw = _items_of(u)
        if o_tuple is None and u_tuple is None:
            if "items" in o or "items" in u:
                path.append("items")
                self.walk(o_rest, u_rest)
                path.pop()
            # The reference registry compares additionalItems as written, beside an items
            # schema or none as much as after a tuple.
            if "additionalItems" in o or "additionalItems" in u:
                self._additional(
                    "additionalItems",
                    "ADDITIONAL_ITEMS",
                    o.get("additionalItems", True),
                    u.get("additionalItems", True),
                )
        else:
            self._tuple(
                o_tuple or (),
                u_tuple or (),
                u_tuple_kw or o_tuple_kw,
                self._model_rest(o, o_rest, 0),
                self._model_rest(u, u_rest, 1),
            )
            rest_kw = u_rest_kw if u_tuple is not None else o_rest_kw
            self._additional(rest_kw, "ADDITIONAL_ITEMS", o_rest, u_rest)
        if "unevaluatedItems" in o or "unevaluatedItems" in u:
            self._additional(
                "unevaluatedItems",
                "UNEVALUATED_ITEMS",
                o.get("unevaluatedItems", True),
                u.get("unevaluatedItems", True),
            )
        a = o.get("contains", _MISSING)
        b = u.get("contains", _MISSING)
        if a is not _MISSING or b is not _MISSING:
            if a is _MISSING:
                self._emit("SCHEMA_ADDED", "contains")
            elif b is _MISSING:
                self._emit("SCHEMA_REMOVED", "contains")
            else:
                path.append("contains")
                self.walk(a, b)
                path.pop()
        a = o.get("uniqueItems") is True
        b = u.get("uniqueItems") is True
        if a != b:
            self._emit("UNIQUE_ITEMS_REMOVED" if a else "UNIQUE_ITEMS_ADDED", "uniqueItems")

    def _model_rest(self, node, rest, side):
        """What the tuple's content model accepts past its items: the items/additionalItems
        schema, or, where that says nothing, unevaluatedItems, as the reference reads it
        (so `unevaluatedItems: false` closes a tuple as `items: false` does)."""
        if "unevaluatedItems" in node:
            resolved = self._res(rest, side)
            if type(resolved) is dict and _VALIDATING.isdisjoint(resolved):
                return node["unevaluatedItems"]
        return rest

    def _tuple(self, ot, ut, keyword, o_rest, u_rest):
        path = self.path
        shared = min(len(ot), len(ut))
        for i in range(shared):
            path.append(f"{keyword}/{i}")
            self.walk(ot[i], ut[i])
            path.pop()
        if len(ot) > shared:
            rest = self._res(u_rest, 1)
            for i in range(shared, len(ot)):
                path.append(f"{keyword}/{i}")
                if rest is False:
                    if self._res(ot[i], 0) is False:
                        self._emit("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=i)
                    else:
                        self._emit("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=i)
                elif _VALIDATING.isdisjoint(rest):
                    self._emit("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", a=i)
                elif self._keep_or_report(
                    ot[i], u_rest, "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i
                ):
                    self._emit("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i)
                path.pop()
        if len(ut) > shared:
            rest = self._res(o_rest, 0)
            for i in range(shared, len(ut)):
                path.append(f"{keyword}/{i}")
                if rest is False:
                    self._emit("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", a=i)
                elif _VALIDATING.isdisjoint(rest):
                    item = self._res(ut[i], 1)
                    if type(item) is dict and _VALIDATING.isdisjoint(item):
                        self._emit("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", a=i)
                    else:
                        self._emit("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", a=i)
                elif self._keep_or_report(
                    o_rest, ut[i], "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i
                ):
                    self._emit("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i)
                path.pop()
