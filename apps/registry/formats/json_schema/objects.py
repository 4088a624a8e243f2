"""The walker's rules for objects: properties, required, content models, dependencies."""

from __future__ import annotations

from apps.registry.formats.json_schema.patterns import _search
from apps.registry.formats.json_schema.vocabulary import (
    _CLOSED,
    _EMPTY,
    _MISSING,
    _OPEN,
    _PARTIAL,
    _UNSURE,
    _VALIDATING,
    _dependencies_of,
    _escape,
    _extra_of,
    _property_added_kind,
    _show,
)


class _ObjectRules:
    """Mixed into the walker: objects."""

    __slots__ = ()

    def _object(self, o, u):
        path = self.path
        op = o.get("properties") or _EMPTY
        up = u.get("properties") or _EMPTY
        o_required = o.get("required") or ()
        u_required = u.get("required") or ()
        o_names = self._names(o_required)
        u_names = self._names(u_required)
        if op or up:
            path.append("properties")
            walk = self.walk
            for key, os_ in op.items():
                us_ = up.get(key, _MISSING)
                path.append(_escape(key))
                if us_ is _MISSING:
                    self._property_removed(key, os_, u)
                else:
                    walk(os_, us_)
                path.pop()
            if up.keys() != op.keys():
                for key, us_ in up.items():
                    if key not in op:
                        path.append(_escape(key))
                        self._property_added(key, us_, o, o_names, u_names)
                        path.pop()
            path.pop()
        if o_names != u_names:
            self._required(o_required, u_required, o_names, u_names, op, up)
        for keyword, family in (
            ("additionalProperties", "ADDITIONAL_PROPERTIES"),
            ("unevaluatedProperties", "UNEVALUATED_PROPERTIES"),
        ):
            if keyword in o or keyword in u:
                self._additional(keyword, family, o.get(keyword, True), u.get(keyword, True))
        if "patternProperties" in o or "patternProperties" in u:
            self._pattern_properties(o, u)
        if (
            "dependencies" in o
            or "dependencies" in u
            or "dependentRequired" in o
            or "dependentRequired" in u
            or "dependentSchemas" in o
            or "dependentSchemas" in u
        ):
            self._dependencies(o, u)
        if "propertyNames" in o or "propertyNames" in u:
            path.append("propertyNames")
            self.walk(o.get("propertyNames", True), u.get("propertyNames", True))
            path.pop()

    def _model(self, node, side):
        if node.get("patternProperties"):
            return _PARTIAL
        extra = self._res(_extra_of(node), side)
        if extra is False:
            return _CLOSED
        if _VALIDATING.isdisjoint(extra):
            return _OPEN
        return _PARTIAL

    def _partial(self, node, key, side):
        """The schema a partially open model gives to `key`: None when it forbids the key."""
        patterns = node.get("patternProperties")
        if patterns:
            self._spend(len(patterns))
            for pattern, schema in patterns.items():
                hit = _search(pattern, key)
                if hit is None:
                    return _UNSURE
                if hit:
                    return None if self._res(schema, side) is False else schema
        extra = _extra_of(node)
        return None if self._res(extra, side) is False else extra

    def _property_removed(self, key, os_, u):
        name = _show(key)
        model = self._model(u, 1)
        if model is _OPEN:
            self._emit("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", a=name)
            return
        schema = self._partial(u, key, 1)
        if schema is None:
            if self._res(os_, 0) is False:
                self._emit("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=name)
            else:
                self._emit("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=name)
        elif schema is _UNSURE:
            self._emit(
                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                a=name,
                detail="a patternProperties regex is too complex to evaluate safely",
            )
        elif self._keep_or_report(
            os_, schema, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name
        ):
            self._emit("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name)

    def _property_added(self, key, us_, o, o_names, u_names):
        name = _show(key)
        target = self._res(us_, 1)
        required = key in u_names and key not in o_names
        default = type(target) is dict and "default" in target
        if self._model(o, 0) is _OPEN:
            if (
                type(target) is dict
                and _VALIDATING.isdisjoint(target)
                and (default or not required)
            ):
                kind = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
            else:
                kind = _property_added_kind(required, default, "OPEN")
            self._emit(kind, a=name)
            return
        schema = self._partial(o, key, 0)
        if schema is _UNSURE:
            self._emit(
                "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                a=name,
                detail="a patternProperties regex is too complex to evaluate safely",
            )
        elif schema is not None and self._keep_or_report(
            schema, us_, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name
        ):
            self._emit("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name)
        self._emit(_property_added_kind(required, default, "UNOPEN"), a=name)

    def _required(self, o_required, u_required, o_names, u_names, op, up):
        self._spend((len(o_required) + len(u_required)) // 16)
        self.path.append("required")
        for key in u_required:
            if key in o_names or type(key) is not str:
                continue
            if key in up:
                if key not in op:
                    continue  # reported with the added property
                target = self._res(up[key], 1)
            elif key in op:
                target = None
            else:
                # a name neither schema declares as a property: the reference registry
                # does not compare it, so neither does Steward
                continue
            if type(target) is dict and "default" in target:
                kind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
            else:
                kind = "REQUIRED_ATTRIBUTE_ADDED"
            self._emit(kind, _escape(key), a=_show(key))
        for key in o_required:
            if key in u_names or type(key) is not str:
                continue
            if key in op and key not in up:
                continue  # reported with the removed property
            self._emit("REQUIRED_ATTRIBUTE_REMOVED", _escape(key), a=_show(key))
        self.path.pop()

    def _additional(self, keyword, family, a, b):
        """additionalProperties / unevaluatedProperties / additionalItems / unevaluatedItems."""
        ra = self._res(a, 0)
        rb = self._res(b, 1)
        if (ra is False) != (rb is False):
            self._emit(f"{family}_ADDED" if ra is False else f"{family}_REMOVED", keyword)
            return
        if ra is False:
            return
        a_any = _VALIDATING.isdisjoint(ra)
        b_any = _VALIDATING.isdisjoint(rb)
        if a_any:
            if not b_any:
                self._emit(f"{family}_NARROWED", keyword)
            return
        if b_any:
            self._emit(f"{family}_EXTENDED", keyword)
            return
        self.path.append(keyword)
        self.walk(a, b)
        self.path.pop()

    def _pattern_properties(self, o, u):
        path = self.path
        op = o.get("patternProperties") or _EMPTY
        up = u.get("patternProperties") or _EMPTY
        path.append("patternProperties")
        for pattern, os_ in op.items():
            path.append(_escape(pattern))
            us_ = up.get(pattern, _MISSING)
            if us_ is not _MISSING:
                self.walk(os_, us_)
            else:  # names matching it now fall to the update's additionalProperties
                extra = _extra_of(u)
                if self._res(extra, 1) is False:
                    self._emit("ADDITIONAL_PROPERTIES_REMOVED")
                else:
                    self._keep_or_report(os_, extra, "ADDITIONAL_PROPERTIES_NARROWED")
            path.pop()
        for pattern, us_ in up.items():
            if pattern in op:
                continue
            path.append(_escape(pattern))
            extra = _extra_of(o)
            if self._res(extra, 0) is False:
                self._emit("ADDITIONAL_PROPERTIES_ADDED")
            else:
                self._keep_or_report(extra, us_, "ADDITIONAL_PROPERTIES_NARROWED")
            path.pop()
        path.pop()

    def _dependencies(self, o, u):
        o_arrays, o_schemas = _dependencies_of(o)
        u_arrays, u_schemas = _dependencies_of(u)
        self._spend(len(o_arrays) + len(u_arrays) + len(o_schemas) + len(u_schemas))
        for key, (keyword, a) in o_arrays.items():
            found = u_arrays.get(key)
            segment = f"{(found or (keyword,))[0]}/{_escape(key)}"
            if found is None:
                self._emit("DEPENDENCY_ARRAY_REMOVED", segment, a=_show(key))
                continue
            sa, sb = set(a), set(found[1])
            if sa == sb:
                continue
            if sb > sa:
                kind = "DEPENDENCY_ARRAY_EXTENDED"
            elif sa > sb:
                kind = "DEPENDENCY_ARRAY_NARROWED"
            else:
                kind = "DEPENDENCY_ARRAY_CHANGED"
            self._emit(kind, segment, a=_show(key))
        for key, (keyword, _) in u_arrays.items():
            if key not in o_arrays:
                self._emit("DEPENDENCY_ARRAY_ADDED", f"{keyword}/{_escape(key)}", a=_show(key))
        for key, (keyword, a) in o_schemas.items():
            found = u_schemas.get(key)
            if found is None:
                self._emit("DEPENDENCY_SCHEMA_REMOVED", f"{keyword}/{_escape(key)}", a=_show(key))
                continue
            self.path.append(f"{found[0]}/{_escape(key)}")
            self.walk(a, found[1])
            self.path.pop()
        for key, (keyword, _) in u_schemas.items():
            if key not in o_schemas:
                self._emit("DEPENDENCY_SCHEMA_ADDED", f"{keyword}/{_escape(key)}", a=_show(key))
