"""apps.core.literals: a constant written into the statement's text, quoted by the
backend, and what it is for: a prepared statement whose one plan meets a partial
index's condition."""

import pytest
from django.db import connection

from apps.assets.models import Asset
from apps.core.literals import Literal
from apps.core.scope import system_scope, tenant_scope
from tests.assets.factories import delegated, new_asset, requested
from tests.core.test_prepared import prepared_plans

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["plain", "50% o'clock", "back\\slash", "%s and %(x)s", "é…"])
def test_a_literal_matches_exactly_what_a_parameter_matches(tenant_a, name):
    new_asset(tenant_a, name)
    new_asset(tenant_a, name + "-not")
    with system_scope():
        as_literal = list(Asset.objects.filter(name=Literal(name)).values_list("name", flat=True))
        as_parameter = list(Asset.objects.filter(name=name).values_list("name", flat=True))
        sql, params = Asset.objects.filter(name=Literal(name)).query.sql_with_params()
    assert as_literal == as_parameter == [name]
    assert params == ()  # in the text, not sent beside it


def test_the_waiting_list_is_planned_once_for_every_run(tenant_a, tenant_b):
    """Asset.objects.workflow_managed() names its status as a literal, so the plan
    PostgreSQL makes once for all runs can meet asset_waiting_on_workflow's condition; as
    a parameter, every run was planned anew."""
    waiting, _ = delegated(tenant_a)
    requested(tenant_b, delegate=False)  # requested, but not delegated: not waiting
    connection.ensure_connection()
    for _ in range(connection.connection.prepare_threshold + 3):
        with system_scope():
            assert [a.pk for a in Asset.objects.workflow_managed().only("pk")] == [waiting.pk]
        with tenant_scope(tenant_b):
            assert not list(Asset.objects.workflow_managed().only("pk"))
    table = Asset._meta.db_table
    [(custom, generic)] = prepared_plans(
        f'%SELECT "{table}"."id" FROM "{table}" WHERE ("{table}"."status" = \'requested\' AND%'
    )
    assert custom == 0 and generic >= 3


def test_a_literal_is_a_string():
    with pytest.raises(TypeError):
        Literal(3)
