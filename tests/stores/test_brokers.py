"""The secret broker hands out references; the secrets themselves never reach
Steward's database, API answers, events or logs."""

import logging
import os

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


KEY = "STEWARD_STORE_SECRET_KNOWLEDGE_SQL__ISRAELCENTRAL__KEY"
CONNECTION = "STEWARD_STORE_SECRET_KNOWLEDGE_SQL__ISRAELCENTRAL__CONNECTION"


@pytest.fixture
def environment_broker(settings):
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.EnvironmentBroker"
    return brokers.EnvironmentBroker()


def test_the_environment_broker_names_the_variables_that_hold_a_stores_credentials(
    tenant_a, store, profile, regions, environment_broker, monkeypatch
):
    monkeypatch.setenv(KEY, "key-from-the-environment-0123456789")
    monkeypatch.setenv(CONNECTION, "postgresql://knowledge:pw-0123456789@db.internal/knowledge")
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])

    services.binding_provision(binding_id=binding.pk)

    binding = reload(binding)
    assert binding.status == "provisioned"
    assert (binding.key_reference, binding.connection_reference) == (
        f"env:{KEY}",
        f"env:{CONNECTION}",
    )
    assert environment_broker.read(binding.key_reference) == os.environ[KEY]
    assert environment_broker.find(str(binding.pk)) == (f"env:{KEY}", f"env:{CONNECTION}")
    environment_broker.revoke(binding.key_reference)  # the operator's to rotate: no error
    assert os.environ[KEY]


def test_a_binding_whose_variables_are_missing_fails_naming_them(
    tenant_a, store, profile, regions, environment_broker, monkeypatch
):
    monkeypatch.setenv(KEY, "key-from-the-environment-0123456789")
    monkeypatch.delenv(CONNECTION, raising=False)
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, store, profile, regions["israelcentral"])

    services.binding_provision(binding_id=binding.pk)

    binding = reload(binding)
    assert binding.status == "failed"
    assert CONNECTION in binding.status_reason and KEY not in binding.status_reason
    assert "0123456789" not in binding.status_reason
    assert environment_broker.find(str(binding.pk)) is None


@pytest.mark.parametrize(
    "reference",
    [
        "env:STEWARD_SECRET_KEY",  # Steward's own secret is never a store's
        "env:DATABASE_URL",
        "env:STEWARD_STORE_SECRET_X__Y__PASSWORD",
        "local:abc/key",
    ],
)
def test_the_environment_broker_reads_only_store_credentials(reference, monkeypatch):
    monkeypatch.setenv("STEWARD_SECRET_KEY", "steward's own")
    with pytest.raises(ValueError):
        brokers.EnvironmentBroker().read(reference)


def test_production_takes_credentials_from_the_environment_by_default():
    from tests.console.test_security_headers import production_settings

    chosen = production_settings("STEWARD_SECRET_BROKER")["STEWARD_SECRET_BROKER"]
    assert chosen == "apps.stores.brokers.EnvironmentBroker"
