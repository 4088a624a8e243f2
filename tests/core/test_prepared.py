"""Statements PostgreSQL prepares (portal.settings, DB_PREPARE_THRESHOLD): a statement
run often on a connection is planned once, and its plan still reads the rows of the
scope each run is in, since the row-level policies read the scope's settings when the
plan runs, not when it is made."""

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import Membership
from portal.settings import prepare_threshold
from tests.factories import member

pytestmark = pytest.mark.django_db


def _usernames(role: str) -> list[str]:
    memberships = Membership.objects.filter(role=role).order_by("user__username")
    return list(memberships.values_list("user__username", flat=True))


def prepared_plans(like: str) -> list[tuple[int, int]]:
    """(custom, generic) plans made of each statement prepared on this connection whose
    text is LIKE `like`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT custom_plans, generic_plans FROM pg_prepared_statements"
            " WHERE statement LIKE %s",
            [like],
        )
        return cursor.fetchall()


def _plans() -> list[tuple[int, int]]:
    # the statement _usernames runs
    table = Membership._meta.db_table
    return prepared_plans(f'%username"%FROM "{table}" %."role" = $1 ORDER BY %')


def test_a_statement_run_often_is_prepared_and_reads_each_scopes_own_rows(tenant_a, tenant_b):
    member(tenant_a, username="of-a")
    member(tenant_b, username="of-b")
    connection.ensure_connection()
    threshold = connection.connection.prepare_threshold
    assert threshold is not None, "preparing is on unless STEWARD_DB_PREPARE_THRESHOLD=off"

    for _ in range(threshold + 1):
        with tenant_scope(tenant_a):
            assert _usernames("member") == ["of-a"]
    [(custom, generic)] = _plans()

    # The one prepared statement, its plan made for each run and made once for all, in
    # each scope: each scope reads its own rows, and no scope reads none.
    for mode in ("force_custom_plan", "force_generic_plan"):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('plan_cache_mode', %s, true)", [mode])
            assert _usernames("member") == []
            with system_scope():
                assert _usernames("member") == ["of-a", "of-b"]
                assert _usernames("admin") == []
            with tenant_scope(tenant_b):
                assert _usernames("member") == ["of-b"]
            with tenant_scope(tenant_a):
                assert _usernames("member") == ["of-a"]
        [(now_custom, now_generic)] = _plans()
        made = (now_custom - custom, now_generic - generic)
        assert made == ((5, 0) if mode == "force_custom_plan" else (0, 5))
        custom, generic = now_custom, now_generic


@pytest.mark.parametrize(
    ("given", "threshold"), [("5", 5), (" 0 ", 0), ("off", None), ("OFF", None)]
)
def test_the_threshold_is_a_count_or_off(given, threshold):
    assert prepare_threshold(given) == threshold


@pytest.mark.parametrize("given", ["", "-1", "five", "2.5"])
def test_a_threshold_that_is_neither_stops_the_process(given):
    with pytest.raises(ImproperlyConfigured, match="STEWARD_DB_PREPARE_THRESHOLD"):
        prepare_threshold(given)


def test_the_database_settings_carry_the_threshold_and_server_side_binding():
    # settings.py is read in a fresh process, as the server reads it at start-up.
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "o = s.DATABASES['default']['OPTIONS']; "
        "print(o['prepare_threshold'], o['server_side_binding'])"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings"}

    def options(**extra):
        run = [sys.executable, "-c", code]
        done = subprocess.run(run, env={**env, **extra}, capture_output=True, text=True)  # noqa: S603
        return done.stdout.strip() or done.stderr

    env.pop("STEWARD_DB_PREPARE_THRESHOLD", None)
    env.pop("STEWARD_DB_POOLER", None)
    assert options() == "5 True"
    # Bound by the server whatever the threshold: every statement is written for that.
    assert options(STEWARD_DB_PREPARE_THRESHOLD="off") == "None True"
    # Behind a pooler in transaction mode preparing is off, unless the operator's
    # pooler keeps prepared statements and says so.
    assert options(STEWARD_DB_POOLER="transaction") == "None True"
    assert options(STEWARD_DB_POOLER="transaction", STEWARD_DB_PREPARE_THRESHOLD="5") == "5 True"
    assert "STEWARD_DB_POOLER" in options(STEWARD_DB_POOLER="statement")
