"""The walker's rules for allOf/anyOf/oneOf, not, and if/then/else."""

from __future__ import annotations

import json

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.parsing import canonical
from apps.registry.formats.json_schema.vocabulary import _MISSING, MAX_BRANCH_PAIRS


class _CombinatorRules:
    """Mixed into the walker: combinators and conditions."""

    __slots__ = ()

    def _combined(self, o_crit, o_list, u_crit, u_list):
        if o_crit != u_crit:
            n0, m0 = len(o_list), len(u_list)
            if (
                u_crit == "anyOf"
                or (n0 == 1 and (m0 == 1 or u_crit == "oneOf"))
                or (m0 == 1 and o_crit == "allOf")
            ):
                self._emit("COMBINED_TYPE_EXTENDED", a=o_crit, b=u_crit)
            else:
                self._emit("COMBINED_TYPE_CHANGED", a=o_crit, b=u_crit)
                return
        ou = self._unique(o_list)
        uu = self._unique(u_list)
        n, m = len(ou), len(uu)
        if n < m:
            self._emit("PRODUCT_TYPE_EXTENDED" if u_crit == "allOf" else "SUM_TYPE_EXTENDED")
        elif n > m:
            self._emit("PRODUCT_TYPE_NARROWED" if o_crit == "allOf" else "SUM_TYPE_NARROWED")
        if n * m > MAX_BRANCH_PAIRS:
            raise SchemaTooComplex(
                f"{o_crit} with {n} and {u_crit} with {m} subschemas at {self._where()}"
                f" would need more than {MAX_BRANCH_PAIRS} pairings"
            )
        path = self.path
        edges: dict = {}
        twin = {}
        for j, (text, _) in enumerate(uu):
            twin.setdefault(text, j)

        def compatible(i, j):
            key = (i, j)
            found = edges.get(key, _MISSING)
            if found is _MISSING:
                path.append(f"{o_crit}/{i}")
                ok, found = self._try(ou[i][1], uu[j][1])
                path.pop()
                found = found if ok else None
                edges[key] = found
            return found is not None

        owner = [-1] * m  # owner[j]: the original subschema matched with update subschema j

        def augment(i, seen):
            first = twin.get(ou[i][0])
            order = range(m) if first is None else (first, *(j for j in range(m) if j != first))
            for j in order:
                if j in seen:
                    continue
                self._spend()
                if not compatible(i, j):
                    continue
                seen.add(j)
                if owner[j] < 0 or augment(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        for i in range(n):
            augment(i, set())
        pairs = sorted((i, j) for j, i in enumerate(owner) if i >= 0)
        for pair in pairs:
            self.out.extend(edges[pair])
        if len(pairs) < min(n, m):
            self._emit("COMBINED_TYPE_SUBSCHEMAS_CHANGED", a=o_crit, b=u_crit)

    def _unique(self, subschemas):
        """The distinct subschemas of a combinator, each with its canonical text."""
        hit = self.uniques.get(id(subschemas))
        if hit is None:
            seen: dict = {}
            for schema in subschemas:
                try:
                    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
                except (TypeError, ValueError) as exc:
                    raise InvalidSchema(f"not JSON at {self._where()}: {exc}") from None
                seen.setdefault(text, schema)
            hit = self.uniques[id(subschemas)] = list(seen.items())
            self.keep.append(subschemas)
        return hit

    def _into_combined(self, o, crit, branches) -> bool:
        """A plain schema becomes a combination."""
        if len(branches) == 1:  # a one-element combination is its member
            self.walk(o, branches[0])
            return True
        if crit != "allOf":
            if self._first_allowed([(o, branch) for branch in branches], "SUM_TYPE_EXTENDED"):
                return True
            types = o.get("type")
            if type(types) is list and len(set(types)) > 1:
                # a type union is itself a sum: each member needs a compatible branch
                collected = []
                for view in self._type_views(o):
                    for branch in branches:
                        ok, found = self._try(view, branch)
                        if ok:
                            collected.extend(found)
                            break
                    else:
                        return False
                self.out.extend(collected)
                if len(branches) > len(set(types)):
                    self._emit("SUM_TYPE_EXTENDED")
                return True
            return False
        return self._all_allowed([(o, branch) for branch in branches], "PRODUCT_TYPE_EXTENDED")

    def _from_combined(self, crit, branches, u) -> bool:
        """A combination becomes a plain schema."""
        if len(branches) == 1:
            self.walk(branches[0], u)
            return True
        pairs = [(branch, u) for branch in branches]
        if crit == "allOf":
            return self._first_allowed(pairs, "PRODUCT_TYPE_NARROWED")
        # every alternative still readable, or only some
        return self._all_allowed(pairs, "SUM_TYPE_NARROWED")

    def _type_views(self, o):
        views = self.views.get(id(o))
        if views is None:
            views = self.views[id(o)] = [{**o, "type": t} for t in dict.fromkeys(o["type"])]
        return views

    def _not(self, o, u):
        a = o.get("not", _MISSING)
        b = u.get("not", _MISSING)
        if a is _MISSING:
            self._emit("NOT_TYPE_EXTENDED", "not")
            return
        if b is _MISSING:
            self._emit("NOT_TYPE_NARROWED", "not")
            return
        self.path.append("not")
        # u's `not` must exclude no more than o's: compare the negated schemas reversed
        ok, found = self._mirror()._try(b, a)
        if ok:
            self._emit("NOT_TYPE_NARROWED")
        else:
            self._emit("NOT_TYPE_EXTENDED", detail=self._mirror()._detail(found))
        self.path.pop()

    def _conditional(self, o, u):
        a = o.get("if", _MISSING)
        b = u.get("if", _MISSING)
        if a is _MISSING and b is _MISSING:
            return  # then/else without if do nothing
        if b is _MISSING:
            self._emit("SCHEMA_REMOVED", "if")
            return
        if a is _MISSING:
            if "then" in u or "else" in u:
                self._emit("SCHEMA_ADDED", "if")
            return
        if not _same_json(a, b):
            self._emit("COMBINED_TYPE_CHANGED", "if", a="if/then/else", b="another condition")
            return
        for keyword in ("then", "else"):
            x = o.get(keyword, True)
            y = u.get(keyword, True)
            if x is not True or y is not True:
                self.path.append(keyword)
                self.walk(x, y)
                self.path.pop()


def _same_json(a, b):
    return a is b or (a == b and canonical(a) == canonical(b))
