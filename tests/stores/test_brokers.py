"""The secret broker hands out references; the secrets themselves never reach
Steward's database, API answers, events or logs."""

import logging

import pytest
from django.db import connection
from rest_framework.test import APIClient

from apps.core.scope import system_scope
from apps.stores import brokers, services
from tests.conftest import bearer
from tests.factories import service_token
from tests.stores.conftest import events, reload
from tests.stores.factories import bind, rule

pytestmark = pytest.mark.django_db


def test_no_secret_material_reaches_the_database_api_events_or_logs(
    tenant_a, store, profile, regions, local_broker, caplog
):
    caplog.set_level(logging.DEBUG)
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    services.binding_provision(binding_id=binding.pk)
    broker = brokers.LocalFileBroker()
    binding = reload(binding)
    secrets = [broker.read(binding.key_reference), broker.read(binding.connection_reference)]
    assert all(len(secret) > 20 for secret in secrets)
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        dumped = []
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT t::text FROM "{table}" AS t')  # noqa: S608 - catalog names
            dumped += [row[0] for row in cursor.fetchall()]
    api = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["stores:read"]))
    shown = api.get(f"/api/v1/stores/bindings/{binding.pk}/").content.decode()
    listed = api.get("/api/v1/stores/bindings/").content.decode()
    everything = "\n".join(dumped) + caplog.text + str(events()) + shown + listed
    assert binding.key_reference in everything  # the references are there
    for secret in secrets:
        assert secret not in everything
    # nor the password inside the connection string, on its own
    password = secrets[1].split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert len(password) > 20 and password not in everything
