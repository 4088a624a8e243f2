"""Constants written into a statement's text instead of sent as its parameters.

Statements are bound on the server and prepared once run often (portal.settings,
STEWARD_DB_PREPARE_THRESHOLD), and a prepared statement's plan made once for all runs
cannot use a partial index whose condition names a value the statement leaves to a
parameter: PostgreSQL cannot prove `status = $1` implies `status = 'requested'`. So
such a statement was planned anew on every run, as before preparing. Where a filter is
written to meet a partial index's condition, the constant is written as a `Literal`.
"""

from __future__ import annotations

from django.db.models import Value


class Literal(Value):
    """A string Value written into the SQL as a quoted constant.

    Quoted as SQL writes it, a quote doubled: PostgreSQL reads backslashes in a plain
    literal as themselves (standard_conforming_strings, on since 9.1, and a setting no
    Steward connection changes). The backend's own quoting (compose_sql) built a
    client-side cursor for each use: it cost more of a request than the plan saved."""

    def __init__(self, value: str):
        if not isinstance(value, str):
            raise TypeError(f"Literal takes a string, not {type(value).__name__}")
        super().__init__(value)

    def as_sql(self, compiler, connection):
        # The statement's text still goes through placeholder formatting: % doubled.
        return "'" + self.value.replace("'", "''").replace("%", "%%") + "'", ()
