"""The kinds of difference the JSON Schema checker reports, the sentence of each, and
which kinds each policy allows."""

# keyword: (kind prefix, whether a larger value accepts more)
_BOUND_KEYWORDS = {
    "maxLength": ("MAX_LENGTH", True),
    "minLength": ("MIN_LENGTH", False),
    "maximum": ("MAXIMUM", True),
    "minimum": ("MINIMUM", False),
    "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM", True),
    "exclusiveMinimum": ("EXCLUSIVE_MINIMUM", False),
    "maxProperties": ("MAX_PROPERTIES", True),
    "minProperties": ("MIN_PROPERTIES", False),
    "maxItems": ("MAX_ITEMS", True),
    "minItems": ("MIN_ITEMS", False),
    "maxContains": ("MAX_CONTAINS", True),
    "minContains": ("MIN_CONTAINS", False),
}
# keyword: (added, removed, increased, decreased)
_BOUND_KINDS = {
    keyword: tuple(
        f"{prefix}_{change}" for change in ("ADDED", "REMOVED", "INCREASED", "DECREASED")
    )
    for keyword, (prefix, _) in _BOUND_KEYWORDS.items()
}
# a bound relaxed: a maximum raised, a minimum lowered, either removed
_BOUNDS_RELAXED = {kinds[1] for kinds in _BOUND_KINDS.values()} | {
    kinds[2] if _BOUND_KEYWORDS[keyword][1] else kinds[3] for keyword, kinds in _BOUND_KINDS.items()
}

_STRICT_ALLOWED = frozenset(
    _BOUNDS_RELAXED
    | {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "PATTERN_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)
_LENIENT_ALLOWED = _STRICT_ALLOWED | {
    "ADDITIONAL_PROPERTIES_NARROWED",
    "ADDITIONAL_PROPERTIES_REMOVED",
    "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_PROPERTIES_REMOVED",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    # the name SchemaDiff used before 8.x for an optional property added to an open model;
    # never emitted here, still understood by is_allowed()
    "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
}
_ALLOWED = {"STRICT": _STRICT_ALLOWED, "LENIENT": frozenset(_LENIENT_ALLOWED)}

# {o} and {u} name the two schemas ("old"/"new" in either order), {a} and {b} their values;
# the sentences hold in both directions, as FORWARD reads the new schema's data with the old.
_TEMPLATES = {
    "ID_CHANGED": "$id is {a} in the {o} schema and {b} in the {u} schema.",
    "TITLE_CHANGED": "The title is {a} in the {o} schema and {b} in the {u} schema.",
    "DESCRIPTION_CHANGED": "The description differs between the {o} and the {u} schema.",
    "DEFAULT_CHANGED": "The default is {a} in the {o} schema and {b} in the {u} schema.",
    "SCHEMA_ADDED": "The {u} schema constrains a value that the {o} schema leaves unconstrained.",
    "SCHEMA_REMOVED": "The {u} schema accepts any value where the {o} schema has constraints.",
    "TYPE_EXTENDED": "The {u} schema accepts {b}, more than {a} in the {o} schema.",
    "TYPE_NARROWED": "The {u} schema accepts only {b}, less than {a} in the {o} schema.",
    "TYPE_CHANGED": "The type is {a} in the {o} schema but {b} in the {u} schema.",
    "PATTERN_ADDED": "The {u} schema requires the pattern {b}; the {o} schema has none.",
    "PATTERN_REMOVED": "The {o} schema requires the pattern {a}; the {u} schema has none.",
    "PATTERN_CHANGED": "The pattern is {a} in the {o} schema but {b} in the {u} schema.",
    "MULTIPLE_OF_ADDED": "The {u} schema requires multipleOf {b}; the {o} schema has none.",
    "MULTIPLE_OF_REMOVED": "The {o} schema requires multipleOf {a}; the {u} schema has none.",
    "MULTIPLE_OF_EXPANDED": (
        "multipleOf is {b} in the {u} schema, a multiple of {a} in the {o} schema."
    ),
    "MULTIPLE_OF_REDUCED": (
        "multipleOf is {b} in the {u} schema, a divisor of {a} in the {o} schema."
    ),
    "MULTIPLE_OF_CHANGED": (
        "multipleOf is {a} in the {o} schema and {b} in the {u} schema; neither divides the other."
    ),
    "REQUIRED_ATTRIBUTE_ADDED": (
        "Property {a} is required by the {u} schema, without a default, but not by the {o} schema."
    ),
    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED": (
        "Property {a} is required by the {u} schema, which gives it a default, but not by"
        " the {o} schema."
    ),
    "REQUIRED_ATTRIBUTE_REMOVED": (
        "Property {a} is required by the {o} schema but not by the {u} schema."
    ),
    "DEPENDENCY_ARRAY_ADDED": (
        "The {u} schema has a dependency array for property {a}; the {o} schema has none."
    ),
    "DEPENDENCY_ARRAY_REMOVED": (
        "The {o} schema has a dependency array for property {a}; the {u} schema has none."
    ),
    "DEPENDENCY_ARRAY_EXTENDED": (
        "The dependency array of property {a} names more properties in the {u} schema than"
        " in the {o} schema."
    ),
    "DEPENDENCY_ARRAY_NARROWED": (
        "The dependency array of property {a} names fewer properties in the {u} schema than"
        " in the {o} schema."
    ),
    "DEPENDENCY_ARRAY_CHANGED": (
        "The dependency array of property {a} differs between the {o} and the {u} schema."
    ),
    "DEPENDENCY_SCHEMA_ADDED": (
        "The {u} schema has a dependency schema for property {a}; the {o} schema has none."
    ),
    "DEPENDENCY_SCHEMA_REMOVED": (
        "The {o} schema has a dependency schema for property {a}; the {u} schema has none."
    ),
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, without a default, is absent from the {o}"
        " schema, whose open content model lets data lack it or hold anything under that name."
    ),
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, with a default, is absent from the {o}"
        " schema, whose open content model lets data hold anything under that name."
    ),
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Optional property {a} of the {u} schema is absent from the {o} schema, whose open"
        " content model lets data hold anything under that name."
    ),
    "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema accepts any value and is absent from the {o} schema,"
        " whose content model is open."
    ),
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, without a default, is absent from the"
        " closed or partially open {o} schema, whose data may lack it."
    ),
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, with a default, is absent from the closed"
        " or partially open {o} schema."
    ),
    "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Optional property {a} of the {u} schema is absent from the closed or partially open"
        " {o} schema."
    ),
    "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose open content"
        " model accepts it."
    ),
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Property {a}, which the {o} schema forbids, is absent from the closed {u} schema."
    ),
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose closed content"
        " model rejects it."
    ),
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema is absent from the {o} schema and accepts all that"
        " the partially open content model of the {o} schema accepts under that name."
    ),
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema is absent from the {o} schema and rejects values"
        " that the partially open content model of the {o} schema accepts under that name."
    ),
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose partially open"
        " content model accepts its values."
    ),
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose partially open"
        " content model rejects some of its values."
    ),
    "UNIQUE_ITEMS_ADDED": "The {u} schema requires unique items; the {o} schema does not.",
    "UNIQUE_ITEMS_REMOVED": "The {o} schema requires unique items; the {u} schema does not.",
    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema is absent from the {o} schema, whose open content"
        " model lets data hold anything there."
    ),
    "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema accepts any value and is absent from the {o}"
        " schema, whose content model is open."
    ),
    "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema is absent from the {o} schema, whose content model"
        " is closed."
    ),
    "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, whose open content"
        " model accepts it."
    ),
    "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Tuple item {a}, which the {o} schema forbids, is absent from the closed {u} schema."
    ),
    "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, whose closed content"
        " model rejects it."
    ),
    "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema accepts all that the {o} schema accepts there."
    ),
    "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema rejects values that the {o} schema accepts there."
    ),
    "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, which still accepts"
        " its values there."
    ),
    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, which rejects some"
        " of its values there."
    ),
    "ENUM_ARRAY_EXTENDED": "The {u} schema allows more values than the {o} schema ({b}).",
    "ENUM_ARRAY_NARROWED": "The {u} schema allows fewer values than the {o} schema ({a}).",
    "ENUM_ARRAY_CHANGED": (
        "The {u} schema allows other values than the {o} schema ({a} of them missing, {b} new)."
    ),
    "COMBINED_TYPE_EXTENDED": ("The {o} schema's {a} is a more permissive {b} in the {u} schema."),
    "COMBINED_TYPE_CHANGED": "The {o} schema's {a} is {b} in the {u} schema.",
    "PRODUCT_TYPE_EXTENDED": "The {u} schema has more allOf members than the {o} schema.",
    "PRODUCT_TYPE_NARROWED": "The {u} schema has fewer allOf members than the {o} schema.",
    "SUM_TYPE_EXTENDED": "The {u} schema offers more alternatives than the {o} schema.",
    "SUM_TYPE_NARROWED": "The {u} schema offers fewer alternatives than the {o} schema.",
    "COMBINED_TYPE_SUBSCHEMAS_CHANGED": (
        "Not every subschema of the {o} schema's {a} has a compatible counterpart in the"
        " {u} schema's {b}."
    ),
    "NOT_TYPE_EXTENDED": "The {u} schema's not excludes values that the {o} schema's allows.",
    "NOT_TYPE_NARROWED": "The {u} schema's not excludes less than the {o} schema's.",
}
for _family, _keyword in (
    ("ADDITIONAL_PROPERTIES", "additionalProperties"),
    ("UNEVALUATED_PROPERTIES", "unevaluatedProperties"),
    ("ADDITIONAL_ITEMS", "additionalItems"),
    ("UNEVALUATED_ITEMS", "unevaluatedItems"),
):
    _TEMPLATES[f"{_family}_ADDED"] = (
        f"{_keyword} forbids in the {{o}} schema what the {{u}} schema allows."
    )
    _TEMPLATES[f"{_family}_REMOVED"] = (
        f"{_keyword} allows in the {{o}} schema what the {{u}} schema forbids."
    )
    _TEMPLATES[f"{_family}_EXTENDED"] = (
        f"The {{u}} schema accepts more under {_keyword} than the {{o}} schema."
    )
    _TEMPLATES[f"{_family}_NARROWED"] = (
        f"The {{u}} schema accepts less under {_keyword} than the {{o}} schema."
    )
for _keyword, (_added, _removed, _increased, _decreased) in _BOUND_KINDS.items():
    _TEMPLATES[_added] = f"The {{u}} schema has {_keyword} {{b}}; the {{o}} schema has none."
    _TEMPLATES[_removed] = f"The {{o}} schema has {_keyword} {{a}}; the {{u}} schema has none."
    _TEMPLATES[_increased] = (
        f"{_keyword} is {{b}} in the {{u}} schema, above {{a}} in the {{o}} schema."
    )
    _TEMPLATES[_decreased] = (
        f"{_keyword} is {{b}} in the {{u}} schema, below {{a}} in the {{o}} schema."
    )

KINDS = tuple(sorted(_TEMPLATES))  # every kind diff() may report
assert _LENIENT_ALLOWED - {"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"} <= set(KINDS)
