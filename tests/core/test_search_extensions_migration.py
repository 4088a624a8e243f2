"""The migration that creates the search's extensions
(apps.core.migrations.0003_search_extensions): a server whose PostgreSQL lacks one is
named in one sentence at migrate time."""

import importlib

import pytest
from django.core.management.base import CommandError
from django.db import connection

pytestmark = pytest.mark.django_db

migration = importlib.import_module("apps.core.migrations.0003_search_extensions")


def test_the_extensions_are_there_after_migrate():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extname FROM pg_extension ORDER BY extname")
        installed = {name for (name,) in cursor.fetchall()}
    assert {"pg_trgm", "btree_gist"} <= installed


def test_a_server_without_the_extension_is_named_in_one_sentence():
    # A name no PostgreSQL has stands in for pg_trgm on a server built without contrib.
    operation = migration.CreateContribExtension("steward_no_such_extension")
    with connection.schema_editor() as editor, pytest.raises(CommandError) as refused:
        operation.database_forwards("core", editor, None, None)
    message = str(refused.value)
    assert "\n" not in message
    assert "steward_no_such_extension" in message and "contrib" in message
