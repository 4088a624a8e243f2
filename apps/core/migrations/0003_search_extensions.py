"""The extensions the console's search reads names through (apps.core.search.named):
pg_trgm, for likeness, and btree_gist, so that one GiST index holds a tenant and its
names and a tenant's search reads its own rows only.

Both are trusted extensions since PostgreSQL 13, so the database's owner creates them
without a superuser. A server whose installation lacks one (PostgreSQL built without
its contrib modules) is named in one sentence rather than a traceback.
"""

from django.contrib.postgres.operations import CreateExtension
from django.core.management.base import CommandError
from django.db import migrations


class CreateContribExtension(CreateExtension):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", [self.name])
            available = cursor.fetchone() is not None
        if not available:
            raise CommandError(
                f"PostgreSQL at {schema_editor.connection.settings_dict['NAME']} has no "
                f"{self.name} extension, which the search needs: install PostgreSQL's "
                "contrib modules (Debian's postgresql package and the postgres image "
                "have them) and migrate again."
            )
        super().database_forwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [("core", "0002_scheduledjob_task")]

    operations = [CreateContribExtension("pg_trgm"), CreateContribExtension("btree_gist")]
