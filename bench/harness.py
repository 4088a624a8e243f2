from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from portal.dburl import url_from_settings


@contextmanager
def scratch_database():
    """Create, migrate and finally drop a database of its own, next to the real one."""
    test_settings = settings.DATABASES["default"].setdefault("TEST", {})
    test_settings["NAME"] = f"{settings.DATABASES['default']['NAME']}_bench"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def rate(work: Callable[[], None], count: int) -> float:
    """Operations per second of `work` run `count` times, after a short warm-up."""
    for _ in range(min(20, count)):
        work()
    started = time.perf_counter()
    for _ in range(count):
        work()
    return count / (time.perf_counter() - started)


def dsn() -> str:
    """libpq connection string of the database Django is using now (the scratch one)."""
    db = connection.settings_dict
    parts = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"]}
    if db["PASSWORD"]:
        parts["password"] = db["PASSWORD"]
    if db["PORT"]:
        parts["port"] = db["PORT"]
    return " ".join(f"{key}={value}" for key, value in parts.items())


def database_url() -> str:
    """DATABASE_URL of the scratch database, for the processes a benchmark starts."""
    return url_from_settings(connection.settings_dict)
