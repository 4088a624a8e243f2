"""Row-level security for tenant-owned tables, installed by migrations.

Every table that holds a tenant's rows gets, through `EnableTenantRLS`:

- ENABLE and FORCE ROW LEVEL SECURITY (FORCE makes the policies apply to the table
  owner too, which is the role Steward connects as);
- `steward_tenant_read`  FOR SELECT: the row's tenant is the session tenant, or the
  session is the system scope;
- `steward_tenant_write` FOR ALL: the row's tenant is the session tenant, both for the
  rows touched (USING) and the rows written (WITH CHECK).

With no scope set both settings are empty, every comparison is NULL, and the table
reads as empty: the policies fail closed. `current_setting` sits in a scalar
sub-select so PostgreSQL evaluates it once per statement instead of once per row.

Tables that also hold platform-wide rows with a NULL tenant (audit events, platform
service accounts) pass `global_rows=True`: such rows are read and written only in
the system scope. `shared_global_rows=True` lets every scope read them as well
(platform-wide defaults a tenant's own evaluation needs, like residency rules).
"""

from __future__ import annotations

from django.db.migrations.operations.base import Operation

from apps.core.scope import SESSION_IS_SYSTEM, SESSION_TENANT

READ_POLICY = "steward_tenant_read"
WRITE_POLICY = "steward_tenant_write"


def rls_statements(
    table: str, column: str, global_rows: bool, shared_global_rows: bool = False
) -> list[str]:
    own = f'"{column}" = {SESSION_TENANT}'
    write = own
    if global_rows:
        write = f'({own} OR ("{column}" IS NULL AND {SESSION_IS_SYSTEM}))'
    read = f"{own} OR {SESSION_IS_SYSTEM}"
    if shared_global_rows:
        # Still nothing without a scope: the policies fail closed.
        read += (
            f' OR ("{column}" IS NULL AND ({SESSION_TENANT} IS NOT NULL OR {SESSION_IS_SYSTEM}))'
        )
    return [
        f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
        f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
        f'CREATE POLICY {READ_POLICY} ON "{table}" FOR SELECT USING ({read})',
        f'CREATE POLICY {WRITE_POLICY} ON "{table}" FOR ALL USING ({write}) WITH CHECK ({write})',
    ]


def drop_statements(table: str) -> list[str]:
    return [
        f'DROP POLICY IF EXISTS {WRITE_POLICY} ON "{table}"',
        f'DROP POLICY IF EXISTS {READ_POLICY} ON "{table}"',
        f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY',
        f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY',
    ]


class EnableTenantRLS(Operation):
    """Migration operation: put one model's table under tenant row-level security."""

    reversible = True
    reduces_to_sql = True

    def __init__(
        self,
        model_name: str,
        column: str = "tenant_id",
        global_rows: bool = False,
        shared_global_rows: bool = False,
    ):
        self.model_name = model_name
        self.column = column
        # Platform-wide rows (NULL tenant), written in the system scope only; with
        # shared_global_rows every scope reads them too (platform defaults, such as
        # the residency rules that apply to all tenants).
        self.global_rows = global_rows or shared_global_rows
        self.shared_global_rows = shared_global_rows

    def deconstruct(self):
        kwargs = {"model_name": self.model_name}
        if self.column != "tenant_id":
            kwargs["column"] = self.column
        if self.shared_global_rows:
            kwargs["shared_global_rows"] = True
        elif self.global_rows:
            kwargs["global_rows"] = True
        return (self.__class__.__qualname__, [], kwargs)

    def state_forwards(self, app_label, state):
        pass

    def _table(self, app_label, state) -> str:
        return state.apps.get_model(app_label, self.model_name)._meta.db_table

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        for statement in rls_statements(
            self._table(app_label, to_state),
            self.column,
            self.global_rows,
            self.shared_global_rows,
        ):
            schema_editor.execute(statement)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        for statement in drop_statements(self._table(app_label, from_state)):
            schema_editor.execute(statement)

    def describe(self):
        return f"Enable tenant row-level security on {self.model_name}"


class MakeAppendOnly(Operation):
    """Migration operation: the database refuses UPDATE and DELETE on a table.

    Used for the audit trail. Redaction, when governance needs it, is a dedicated
    database function that is allowed through this guard explicitly.
    """

    reversible = True
    reduces_to_sql = True

    def __init__(self, model_name: str):
        self.model_name = model_name

    def deconstruct(self):
        return (self.__class__.__qualname__, [], {"model_name": self.model_name})

    def state_forwards(self, app_label, state):
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        table = to_state.apps.get_model(app_label, self.model_name)._meta.db_table
        schema_editor.execute(
            """
            CREATE OR REPLACE FUNCTION steward_refuse_change() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '% on % is refused: the table is append-only',
                    TG_OP, TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
            END;
            $$
            """,
            None,  # no parameters: the % in RAISE's format must reach PostgreSQL as is
        )
        schema_editor.execute(
            f'CREATE TRIGGER steward_append_only BEFORE UPDATE OR DELETE ON "{table}" '
            "FOR EACH ROW EXECUTE FUNCTION steward_refuse_change()"
        )

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        table = from_state.apps.get_model(app_label, self.model_name)._meta.db_table
        schema_editor.execute(f'DROP TRIGGER IF EXISTS steward_append_only ON "{table}"')

    def describe(self):
        return f"Make {self.model_name} append-only"
