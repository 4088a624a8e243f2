"""Issue 38's audit of the Schema Registry API against the reference registry's
documented answers (Confluent's API reference and its resources' source): the answers
the conformance module did not pin yet, each as the reference gives it."""

import json
import tomllib

import pytest

from tests.registry import test_confluent_conformance as conformance
from tests.registry.test_confluent_conformance import AVRO, ORDER, ORDER_2, body, check, seed

pytestmark = pytest.mark.django_db(transaction=True)

http = conformance.http  # the conformance module's client, a registry:admin service's


def test_avro_answers_leave_the_default_schema_type_out(http):
    """The reference serializes schemaType through SchemaTypeConverter: AVRO, its
    default, is left out of every answer; other types are named."""
    _, _, avro = seed(http)
    assert "schemaType" not in check(http, "GET", f"/schemas/ids/{avro}", 200)
    assert "schemaType" not in check(http, "GET", "/subjects/payments-value/versions/1", 200)
    listed = check(http, "GET", "/schemas", 200)
    assert {s["subject"]: s.get("schemaType") for s in listed} == {
        "orders-value": "JSON",
        "payments-value": None,
    }
    found = check(http, "POST", "/subjects/payments-value", 200, json=body(AVRO, "AVRO"))
    assert "schemaType" not in found and found["id"] == avro


def test_schema_by_id_parameters(http):
    """`fetchMaxId=true` adds `maxId`, the highest id; `subject` scopes the lookup and
    answers the same schema."""
    first, second, avro = seed(http)
    top = max(first, second, avro)
    found = check(http, "GET", f"/schemas/ids/{first}", 200, params={"fetchMaxId": "true"})
    assert found["maxId"] == top and json.loads(found["schema"]) == ORDER
    assert "maxId" not in check(http, "GET", f"/schemas/ids/{first}", 200)
    scoped = check(http, "GET", f"/schemas/ids/{first}", 200, params={"subject": "orders-value"})
    assert json.loads(scoped["schema"]) == ORDER


def test_versions_and_their_errors(http):
    """Version ids: `latest` and -1 the latest, any other number below 1 or a word 42202;
    an unknown subject is 40401 before its version is looked at."""
    seed(http)
    check(http, "GET", "/subjects/orders-value/versions/latest/schema", 200, ORDER_2)
    check(http, "GET", "/subjects/nothing-value/versions/latest/schema", 404, error=40401)
    check(http, "GET", "/subjects/nothing-value/versions/latest", 404, error=40401)
    for bad in ("0", "-2"):
        check(http, "GET", f"/subjects/orders-value/versions/{bad}", 422, error=42202)
        check(http, "DELETE", f"/subjects/orders-value/versions/{bad}", 422, error=42202)
    check(http, "DELETE", "/subjects/orders-value/versions/7", 404, error=40402)
    check(http, "DELETE", "/subjects/nothing-value/versions/1", 404, error=40401)
    check(http, "GET", "/schemas/ids/999999/versions", 404, error=40403)
    check(http, "GET", "/schemas/ids/999999/schema", 404, error=40403)


def test_subject_deletion_rules(http):
    """A subject is soft-deleted before it is removed (40405 otherwise); a READONLY
    registry refuses writes and deletions (42205) and still answers reads."""
    seed(http)
    params = {"permanent": "true"}
    check(http, "DELETE", "/subjects/orders-value", 404, error=40405, params=params)
    check(http, "PUT", "/mode", 200, {"mode": "READONLY"}, json={"mode": "READONLY"})
    check(http, "DELETE", "/subjects/orders-value", 422, error=42205)
    check(http, "DELETE", "/subjects/orders-value/versions/1", 422, error=42205)
    check(http, "GET", "/subjects/orders-value/versions", 200, [1, 2])
    check(http, "PUT", "/mode", 200, {"mode": "READWRITE"}, json={"mode": "READWRITE"})
    check(http, "DELETE", "/subjects/orders-value", 200, [1, 2])


def test_context_qualified_subjects_are_listed_and_filtered(http):
    """A subject in a context is registered and read under its qualified name; the
    prefix filter takes the qualified name."""
    seed(http)
    check(http, "POST", "/subjects/:.eu:orders-value/versions", 200, json=body(ORDER))
    check(http, "GET", "/subjects/:.eu:orders-value/versions", 200, [1])
    check(http, "GET", "/subjects", 200, [":.eu:orders-value"], params={"subjectPrefix": ":.eu:"})


def test_per_subject_levels_and_modes_are_independent(http):
    """orders-value and orders-key keep their own level and mode."""
    seed(http)
    check(http, "PUT", "/config/orders-key", 200, json={"compatibility": "NONE"})
    check(http, "GET", "/config/orders-key", 200, {"compatibilityLevel": "NONE"})
    check(http, "GET", "/config/orders-value", 404, error=40408)
    check(http, "PUT", "/mode/orders-key", 200, json={"mode": "READONLY"})
    check(http, "GET", "/mode/orders-value", 404, error=40409)
    check(http, "POST", "/subjects/orders-value/versions", 200, json=body(ORDER))


def test_a_mode_change_echoes_the_request_as_sent(http):
    """The reference answers PUT /mode with the request it was sent ("On success, echoes
    the original request back to the client"), the mode in the case it was written; the
    mode it keeps is upper-cased."""
    seed(http)
    check(http, "PUT", "/mode", 200, {"mode": "readonly"}, json={"mode": "readonly"})
    check(http, "GET", "/mode", 200, {"mode": "READONLY"})
    check(http, "PUT", "/mode", 200, {"mode": "ReadWrite"}, json={"mode": "ReadWrite"})
    check(http, "PUT", "/mode/orders-key", 200, {"mode": "readonly"}, json={"mode": "readonly"})
    check(http, "GET", "/mode/orders-key", 200, {"mode": "READONLY"})


def test_the_registry_enters_import_mode_only_empty_or_forced(http):
    """PUT /mode IMPORT on a registry with live subjects is 42205 ("Cannot import since
    found existing subjects") unless force=true; an empty registry takes it."""
    check(http, "PUT", "/mode", 200, {"mode": "IMPORT"}, json={"mode": "IMPORT"})
    check(http, "PUT", "/mode", 200, {"mode": "READWRITE"}, json={"mode": "READWRITE"})
    seed(http)
    check(http, "PUT", "/mode", 422, json={"mode": "IMPORT"}, error=42205)
    check(http, "GET", "/mode", 200, {"mode": "READWRITE"})
    forced = {"force": "true"}
    check(http, "PUT", "/mode", 200, {"mode": "IMPORT"}, json={"mode": "IMPORT"}, params=forced)
    check(http, "GET", "/mode", 200, {"mode": "IMPORT"})


def test_a_subject_enters_import_mode_when_it_has_no_live_version(http):
    """PUT /mode/{subject} IMPORT is 42205 while the subject has a live version; as the
    reference counts subjects (hasSubjects without the deleted), soft-deleted versions do
    not count; a subject already in IMPORT (the registry's mode) is not checked again."""
    seed(http)
    check(http, "PUT", "/mode/orders-value", 422, json={"mode": "IMPORT"}, error=42205)
    check(http, "GET", "/mode/orders-value", 404, error=40409)
    check(http, "DELETE", "/subjects/orders-value", 200, [1, 2])
    check(http, "PUT", "/mode/orders-value", 200, {"mode": "IMPORT"}, json={"mode": "IMPORT"})
    check(http, "GET", "/mode/orders-value", 200, {"mode": "IMPORT"})
    forced = {"force": "true"}
    check(http, "PUT", "/mode", 200, {"mode": "IMPORT"}, json={"mode": "IMPORT"}, params=forced)
    check(http, "PUT", "/mode/payments-value", 200, {"mode": "IMPORT"}, json={"mode": "IMPORT"})


def test_server_metadata(http, settings):
    """/v1/metadata/id answers the reference's ServerClusterId (no `id`: it is empty and
    left out; the cluster ids under scope.clusters), /v1/metadata/version the release."""
    settings.STEWARD_REGISTRY_KAFKA_CLUSTER_ID = "lkc-9z7q"
    clusters = {"kafka-cluster": "lkc-9z7q", "schema-registry-cluster": "schema-registry"}
    check(http, "GET", "/v1/metadata/id", 200, {"scope": {"path": [], "clusters": clusters}})
    release = tomllib.loads((settings.BASE_DIR / "pyproject.toml").read_text())["project"]
    check(http, "GET", "/v1/metadata/version", 200, {"version": release["version"]})
    check(http, "GET", "/v1/metadata/other", 404, error=404)


def test_the_root_answers_an_empty_object(http):
    """The reference's root resource, a liveness check: GET and POST answer `{}`."""
    check(http, "GET", "/", 200, {})
    check(http, "POST", "/", 200, {}, json={"any": "thing"})
    check(http, "POST", "/", 400, content=b"[1]", error=400)


def test_a_configs_normalize_is_kept_answered_and_normalizes_registrations(http):
    """`normalize` is a field of the reference's config: kept registry-wide and per
    subject, answered by GET and DELETE, and a registration under it is normalized as
    `normalize=true` would (sorted keys for JSON Schema); not true/false is 422."""
    on = {"normalize": True}
    check(http, "PUT", "/config", 200, on, json=on)
    check(http, "GET", "/config", 200, {"compatibilityLevel": "BACKWARD", "normalize": True})
    found = check(http, "POST", "/subjects/orders-value/versions", 200, json=body(ORDER))
    assert found["schema"] == '{"properties":{"id":{"type":"string"}},"type":"object"}'
    check(
        http, "PUT", "/config/payments-value", 200, {"normalize": False}, json={"normalize": False}
    )
    check(http, "GET", "/config/payments-value", 200, {"normalize": False})
    in_force = check(http, "GET", "/config/payments-value", 200, params={"defaultToGlobal": "true"})
    assert in_force == {"compatibilityLevel": "BACKWARD", "normalize": False}
    kept = check(http, "POST", "/subjects/payments-value/versions", 200, json=body(ORDER))
    assert kept["schema"] == json.dumps(ORDER, separators=(",", ":"))  # its own key order
    check(http, "PUT", "/config", 422, json={"normalize": "yes"}, error=422)
    check(http, "DELETE", "/config", 200, {"compatibilityLevel": "BACKWARD", "normalize": True})
    check(http, "GET", "/config", 200, {"compatibilityLevel": "BACKWARD"})
