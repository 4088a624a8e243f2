"""The refusals every schema type raises, so that callers catch one class whatever the type."""


class InvalidSchema(Exception):
    """The input is not JSON, not a JSON Schema this registry accepts, or refers elsewhere."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SchemaTooComplex(InvalidSchema):
    """Checking the schema would exceed the nesting depth or the work budget."""
