"""REST conformance of the Schema Registry API: for every endpoint the reference
registry documents (Confluent's Schema Registry API reference), the answer it gives:
status, `error_code`, the body's shape and the content type. Over plain HTTP against a
live Steward, as a tool that speaks the API without a client library would."""

import json

import httpx
import pytest

from tests.factories import service_token

pytestmark = pytest.mark.django_db(transaction=True)

MEDIA = "application/vnd.schemaregistry.v1+json"
ORDER = {"type": "object", "properties": {"id": {"type": "string"}}}
ORDER_2 = {"type": "object", "properties": {"id": {"type": "string"}, "note": {}}}
BREAKING = {"type": "object", "properties": {"id": {"type": "integer"}}}
AVRO = {"type": "record", "name": "Pay", "fields": [{"name": "id", "type": "string"}]}


def body(document, kind="JSON", **extra):
    return {"schema": json.dumps(document), "schemaType": kind, **extra}


@pytest.fixture
def http(live_server):
    """An HTTP client of a service account allowed to manage the registry's settings."""
    token = service_token(scopes=["registry:write", "registry:admin"], name="tooling")
    with httpx.Client(
        base_url=f"{live_server.url}/api/schema-registry",
        auth=("tooling", token.secret),
        headers={"Accept": MEDIA, "Content-Type": MEDIA},
        timeout=30,
    ) as client:
        yield client


def check(http, method, path, status, expected=None, *, error=None, **kwargs):
    """One call and the reference's answer to it: the status, the registry's media type,
    `error_code` for an error, and the body (equal, or a predicate) for the rest."""
    answer = http.request(method, path, **kwargs)
    where = f"{method} {path} {kwargs.get('params', '')}"
    assert answer.status_code == status, (where, answer.text)
    assert answer.headers["content-type"] == MEDIA, where
    found = answer.json()
    if error is not None:
        assert set(found) == {"error_code", "message"}, where
        assert found["error_code"] == error, (where, found)
        assert isinstance(found["message"], str) and found["message"], where
    elif callable(expected):
        assert expected(found), (where, found)
    elif expected is not None:
        assert found == expected, (where, found)
    return found


def seed(http):
    """orders-value v1 and v2, payments-value (Avro) v1: the answers' ids."""
    first = check(http, "POST", "/subjects/orders-value/versions", 200, json=body(ORDER))
    second = check(http, "POST", "/subjects/orders-value/versions", 200, json=body(ORDER_2))
    avro = check(http, "POST", "/subjects/payments-value/versions", 200, json=body(AVRO, "AVRO"))
    return first["id"], second["id"], avro["id"]


def test_subjects_and_their_versions(http):
    first, second, _ = seed(http)
    check(http, "GET", "/subjects", 200, ["orders-value", "payments-value"])
    check(http, "GET", "/subjects", 200, ["orders-value"], params={"subjectPrefix": "ord"})
    check(http, "GET", "/subjects/orders-value/versions", 200, [1, 2])
    check(http, "GET", "/subjects/nothing-value/versions", 404, error=40401)
    version = check(http, "GET", "/subjects/orders-value/versions/1", 200)
    assert {k: version[k] for k in ("subject", "id", "version", "schemaType")} == {
        "subject": "orders-value",
        "id": first,
        "version": 1,
        "schemaType": "JSON",
    }
    assert json.loads(version["schema"]) == ORDER
    latest = check(http, "GET", "/subjects/orders-value/versions/latest", 200)
    assert (latest["id"], latest["version"]) == (second, 2)
    check(http, "GET", "/subjects/orders-value/versions/-1", 200, lambda b: b["version"] == 2)
    check(http, "GET", "/subjects/orders-value/versions/3", 404, error=40402)
    check(http, "GET", "/subjects/orders-value/versions/abc", 422, error=42202)
    check(http, "GET", "/subjects/nothing-value/versions/1", 404, error=40401)
    check(http, "GET", "/subjects/orders-value/versions/1/schema", 200, ORDER)
    check(http, "GET", "/subjects/orders-value/versions/1/referencedby", 200, [])
    # lookup: the version of a schema under the subject
    found = check(http, "POST", "/subjects/orders-value", 200, json=body(ORDER))
    assert (found["subject"], found["id"], found["version"]) == ("orders-value", first, 1)
    check(http, "POST", "/subjects/orders-value", 404, json=body(BREAKING), error=40403)
    check(http, "POST", "/subjects/nothing-value", 404, json=body(ORDER), error=40401)
    # registering: the id; the same schema again, the same id; an invalid one, 42201
    again = check(http, "POST", "/subjects/orders-value/versions", 200, json=body(ORDER))
    assert again["id"] == first
    check(http, "POST", "/subjects/orders-value/versions", 422, json=body(12), error=42201)
    check(http, "POST", "/subjects/orders-value/versions", 409, json=body(BREAKING), error=40901)
    check(http, "POST", "/subjects/orders%01-value/versions", 422, json=body(ORDER), error=42208)


def test_schemas_by_id(http):
    first, second, avro = seed(http)
    check(http, "GET", f"/schemas/ids/{first}", 200, lambda b: json.loads(b["schema"]) == ORDER)
    check(http, "GET", f"/schemas/ids/{avro}", 200, lambda b: "schemaType" not in b)
    check(http, "GET", "/schemas/ids/999999", 404, error=40403)
    check(http, "GET", f"/schemas/ids/{first}/schema", 200, ORDER)
    check(http, "GET", f"/schemas/ids/{first}/subjects", 200, ["orders-value"])
    check(
        http,
        "GET",
        f"/schemas/ids/{second}/versions",
        200,
        [{"subject": "orders-value", "version": 2}],
    )
    check(http, "GET", "/schemas/ids/999999/subjects", 404, error=40403)
    check(http, "GET", "/schemas/types", 200, lambda b: {"AVRO", "JSON"} <= set(b))
    listed = check(http, "GET", "/schemas", 200)
    assert [(s["subject"], s["version"]) for s in listed] == [
        ("orders-value", 1),
        ("orders-value", 2),
        ("payments-value", 1),
    ]


def test_compatibility(http):
    seed(http)
    path = "/compatibility/subjects/orders-value/versions"
    check(http, "POST", f"{path}/latest", 200, {"is_compatible": True}, json=body(ORDER_2))
    check(http, "POST", f"{path}/latest", 200, {"is_compatible": False}, json=body(BREAKING))
    check(http, "POST", f"{path}/1", 200, {"is_compatible": True}, json=body(ORDER))
    check(http, "POST", f"{path}/9", 404, json=body(ORDER), error=40402)
    check(http, "POST", f"{path}/x", 422, json=body(ORDER), error=42202)
    check(http, "POST", path, 200, {"is_compatible": False}, json=body(BREAKING))
    verbose = check(http, "POST", path, 200, json=body(BREAKING), params={"verbose": "true"})
    assert verbose["is_compatible"] is False and verbose["messages"]
    # a subject that does not exist: nothing to be incompatible with
    missing = "/compatibility/subjects/nothing-value/versions"
    check(http, "POST", f"{missing}/latest", 200, {"is_compatible": True}, json=body(ORDER))
    check(http, "POST", missing, 200, {"is_compatible": True}, json=body(ORDER))
    # another type against the subject: incompatible, not an invalid schema
    check(http, "POST", path, 200, {"is_compatible": False}, json=body(AVRO, "AVRO"))


def test_config(http):
    seed(http)
    check(http, "GET", "/config", 200, {"compatibilityLevel": "BACKWARD"})
    check(http, "PUT", "/config", 200, {"compatibility": "FULL"}, json={"compatibility": "FULL"})
    check(http, "GET", "/config", 200, {"compatibilityLevel": "FULL"})
    check(http, "PUT", "/config", 422, json={"compatibility": "SIDEWAYS"}, error=42203)
    check(http, "GET", "/config/orders-value", 404, error=40408)
    params = {"defaultToGlobal": "true"}
    check(http, "GET", "/config/orders-value", 200, {"compatibilityLevel": "FULL"}, params=params)
    check(
        http,
        "PUT",
        "/config/orders-value",
        200,
        {"compatibility": "NONE"},
        json={"compatibility": "NONE"},
    )
    check(http, "GET", "/config/orders-value", 200, {"compatibilityLevel": "NONE"})
    check(http, "GET", "/config/orders-key", 404, error=40408)
    # a subject with no schema takes a level
    check(
        http,
        "PUT",
        "/config/new-value",
        200,
        {"compatibility": "FORWARD"},
        json={"compatibility": "FORWARD"},
    )
    check(http, "DELETE", "/config/orders-value", 200, {"compatibilityLevel": "NONE"})
    check(http, "DELETE", "/config/orders-value", 404, error=40401)
    check(http, "DELETE", "/config", 200, {"compatibilityLevel": "FULL"})
    check(http, "GET", "/config", 200, {"compatibilityLevel": "BACKWARD"})


def test_mode(http):
    seed(http)
    check(http, "GET", "/mode", 200, {"mode": "READWRITE"})
    check(http, "PUT", "/mode", 422, json={"mode": "SOMETIMES"}, error=42204)
    check(http, "GET", "/mode/orders-value", 404, error=40409)
    params = {"defaultToGlobal": "true"}
    check(http, "GET", "/mode/orders-value", 200, {"mode": "READWRITE"}, params=params)
    check(http, "PUT", "/mode/orders-value", 200, {"mode": "READONLY"}, json={"mode": "READONLY"})
    check(http, "GET", "/mode/orders-value", 200, {"mode": "READONLY"})
    check(http, "GET", "/mode/orders-key", 404, error=40409)
    check(http, "POST", "/subjects/orders-value/versions", 422, json=body(ORDER_2), error=42205)
    check(http, "DELETE", "/mode/orders-value", 200, {"mode": "READONLY"})
    check(http, "DELETE", "/mode/orders-value", 404, error=40401)
    check(http, "PUT", "/mode", 200, {"mode": "READONLY"}, json={"mode": "READONLY"})
    check(http, "DELETE", "/mode", 200, {"mode": "READONLY"})
    check(http, "GET", "/mode", 200, {"mode": "READWRITE"})


def test_deletion(http):
    seed(http)
    check(http, "DELETE", "/subjects/orders-value/versions/1", 200, 1)
    check(http, "DELETE", "/subjects/orders-value/versions/1", 404, error=40406)
    check(http, "GET", "/subjects/orders-value/versions", 200, [2])
    check(http, "GET", "/subjects/orders-value/versions", 200, [1], params={"deletedOnly": "true"})
    check(http, "GET", "/subjects/orders-value/versions", 200, [1, 2], params={"deleted": "true"})
    check(
        http,
        "DELETE",
        "/subjects/orders-value/versions/2",
        404,
        error=40407,
        params={"permanent": "true"},
    )
    check(http, "DELETE", "/subjects/orders-value/versions/1", 200, 1, params={"permanent": "true"})
    check(http, "DELETE", "/subjects/payments-value", 200, [1])
    check(http, "DELETE", "/subjects/payments-value", 404, error=40404)
    check(http, "GET", "/subjects", 200, ["payments-value"], params={"deletedOnly": "true"})
    check(
        http,
        "POST",
        "/subjects/payments-value",
        200,
        lambda b: b["version"] == 1,
        json=body(AVRO, "AVRO"),
        params={"deleted": "true"},
    )
    check(http, "DELETE", "/subjects/payments-value", 200, [1], params={"permanent": "true"})
    check(http, "DELETE", "/subjects/payments-value", 404, error=40401)


def test_contexts_errors_and_media_types(http, live_server):
    seed(http)
    check(http, "POST", "/subjects/:.eu:orders-value/versions", 200, json=body(ORDER))
    check(http, "GET", "/contexts", 200, [".", ".eu"])
    check(http, "GET", "/no/such/path", 404, error=404)
    check(http, "POST", "/subjects/orders-value/versions", 400, content=b"[1]", error=400)
    for media in ("application/vnd.schemaregistry+json", "application/json"):
        check(
            http,
            "POST",
            "/subjects/orders-value",
            200,
            lambda b: b["version"] == 1,
            content=json.dumps(body(ORDER)),
            headers={"Content-Type": media},
        )
    anonymous = httpx.get(f"{live_server.url}/api/schema-registry/subjects", timeout=30)
    assert anonymous.status_code == 401
    assert anonymous.json()["error_code"] == 40101
    assert anonymous.headers["content-type"] == MEDIA
