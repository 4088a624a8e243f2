"""The callback endpoint: signed callbacks recorded and applied once; everything else
refused with a clear code and no change."""

import json
import time
import uuid

import pytest
from celery.contrib.testing.worker import start_worker
from django.test import RequestFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from apps.assets import services
from apps.assets.api.callbacks import CallbackSerializer, plain_callback
from apps.assets.models import Asset
from apps.core.scope import tenant_scope
from apps.eventing.transports import webhook_signature
from portal.celery import app
from tests.assets.factories import delegated, outcomes, status_of
from tests.support import wait_for

URL = "/api/v1/assets/workflow-callbacks/"
SECRET = "wf-callback-secret"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def callback_secret(settings):
    settings.STEWARD_WORKFLOW_CALLBACK_SECRET = SECRET


def send(body, *, secret=SECRET, stamp=None, raw=None, callback_id=None):
    raw = raw if raw is not None else json.dumps(body).encode()
    stamp = int(time.time()) if stamp is None else stamp
    callback_id = callback_id or f"cb-{uuid.uuid4().hex[:8]}"
    signature = webhook_signature(secret.encode(), callback_id, stamp, raw)
    return APIClient().generic(
        "POST",
        URL,
        raw,
        content_type="application/json",
        HTTP_WEBHOOK_ID=callback_id,
        HTTP_WEBHOOK_TIMESTAMP=str(stamp),
        HTTP_WEBHOOK_SIGNATURE=signature,
    )


def test_a_signed_callback_is_recorded_answered_202_and_applied_once(tenant_a):
    asset, instance = delegated(tenant_a)
    body = {"workflow_instance_id": str(instance), "decision": "approve", "reason": "ok"}
    first, duplicate = send(body), send(body)
    assert first.status_code == duplicate.status_code == 202
    assert status_of(asset) == "requested"  # a worker applies it
    assert first.json()["receipt"] != duplicate.json()["receipt"]
    assert services.drain_callbacks(tenant_a.pk) == 2
    assert status_of(asset) == "approved"
    assert sorted(outcomes()) == ["applied", "ignored"]
    assert services.drain_callbacks(tenant_a.pk) == 0


@pytest.mark.parametrize(
    "tamper,code",
    [
        ({"secret": "wrong"}, "bad_signature"),
        ({"stamp": int(time.time()) - 3600}, "stale_timestamp"),
    ],
)
def test_bad_signatures_and_stale_timestamps_are_refused_and_change_nothing(tenant_a, tamper, code):
    asset, instance = delegated(tenant_a)
    response = send({"workflow_instance_id": str(instance), "decision": "approve"}, **tamper)
    assert response.status_code == 401 and response.json()["code"] == code
    assert status_of(asset) == "requested" and outcomes() == []


def test_an_unsigned_callback_is_refused(tenant_a):
    response = APIClient().post(
        URL, {"workflow_instance_id": str(uuid.uuid4()), "decision": "approve"}
    )
    assert response.status_code == 401 and response.json()["code"] == "signature_missing"


@pytest.mark.parametrize(
    "raw,code",
    [
        (b'{"workflow_instance_id": ', "malformed_request"),
        (b'{"workflow_instance_id": "not-a-uuid", "decision": "approve"}', "invalid"),
        (
            b'{"workflow_instance_id": "%s", "decision": "maybe"}' % str(uuid.UUID(int=7)).encode(),
            "invalid",
        ),
    ],
)
def test_malformed_bodies_are_refused_and_change_nothing(tenant_a, raw, code):
    response = send(None, raw=raw)
    assert response.status_code == 400 and response.json()["code"] == code
    assert outcomes() == []


def test_an_unknown_instance_is_answered_404_and_recorded_for_operators(tenant_a):
    response = send({"workflow_instance_id": str(uuid.uuid4()), "decision": "reject"})
    assert response.status_code == 404
    assert response.json()["code"] == "unknown_workflow_instance"
    assert outcomes() == ["unknown_instance"]


@pytest.mark.django_db(transaction=True)
def test_an_accepted_callback_is_applied_by_a_real_worker_without_any_sweep(tenant_a):
    asset, instance = delegated(tenant_a)
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        body = {"workflow_instance_id": str(instance), "decision": "reject", "reason": "late"}
        assert send(body).status_code == 202
        wait_for(lambda: outcomes() == ["applied"], timeout=30)
    assert status_of(asset) == "rejected"


def test_an_unusual_but_valid_body_takes_the_serializers_path_and_is_recorded(tenant_a):
    # given an instance id as an integer, which the serializer accepts and the plain
    # path leaves to it
    asset, instance = delegated(tenant_a)
    body = {"workflow_instance_id": instance.int, "decision": "approve", "reason": "  ok  "}
    # when / then
    assert send(body).status_code == 202
    assert services.drain_callbacks(tenant_a.pk) == 1
    assert status_of(asset) == "approved"
    with tenant_scope(tenant_a):
        assert Asset.objects.get(pk=asset.pk).decision_reason == "ok"


TEXT = st.text(alphabet=st.sampled_from("ab \t\n\x00\ud800é-{}"), max_size=6)
UUID_TEXT = st.uuids().flatmap(
    lambda u: st.sampled_from([str(u), u.hex, f"{{{u}}}", f"urn:uuid:{u}", f" {u}", str(u).upper()])
)
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    TEXT,
    UUID_TEXT,
    st.sampled_from(["approve", "reject", "Approve", ""]),
    st.lists(TEXT, max_size=2),
)
BODY = st.dictionaries(
    st.sampled_from(["workflow_instance_id", "decision", "reason", "extra"]), VALUE
) | st.builds(
    lambda instance, decision, reason: {
        "workflow_instance_id": instance,
        "decision": decision,
        "reason": reason,
    },
    UUID_TEXT,
    st.sampled_from(["approve", "reject"]),
    TEXT,
)


@given(
    body=BODY,
    content_type=st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "application/json; charset=latin-1",
            "text/plain",
        ]
    ),
)
# The fixtures (the secret, the database) play no part in the comparison.
@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_plain_path_takes_only_what_the_serializer_takes_the_same(body, content_type):
    request = RequestFactory().post(URL, json.dumps(body), content_type=content_type)
    plain = plain_callback(request)
    if plain is None:
        return  # the serializer answers it, as it always did
    payload = CallbackSerializer(data=body)
    assert payload.is_valid(), payload.errors
    data = payload.validated_data
    assert plain == (data["workflow_instance_id"], data["decision"], data["reason"])


def test_a_timestamp_that_is_not_a_number_is_its_own_refusal(tenant_a):
    # It was reported as `signature_missing`, though every header was there.
    raw = json.dumps({"workflow_instance_id": str(uuid.uuid4()), "decision": "approve"}).encode()
    response = APIClient().generic(
        "POST",
        URL,
        raw,
        content_type="application/json",
        HTTP_WEBHOOK_ID="cb-1",
        HTTP_WEBHOOK_TIMESTAMP="soon",
        HTTP_WEBHOOK_SIGNATURE="v1,abc",
    )
    assert response.status_code == 401 and response.json()["code"] == "bad_timestamp"
    assert outcomes() == []


@pytest.mark.parametrize("depth", [100, 1000, 100_000])
def test_a_deeply_nested_signed_body_is_bad_input_on_both_paths(tenant_a, depth):
    raw = b"[" * depth + b"]" * depth
    response = send(None, raw=raw)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "json_too_deep"
    nested = b'{"workflow_instance_id": "%s", "decision": "approve", "reason": %s}' % (
        str(uuid.uuid4()).encode(),
        raw,
    )
    response = send(None, raw=nested)
    assert response.status_code == 400 and response.json()["code"] == "json_too_deep"
    assert outcomes() == []
