"""The Workflow Service's callback endpoint: verify, record, queue, answer 202."""

from __future__ import annotations

import hmac
import json
import time
import uuid

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from apps.assets import services
from apps.assets.codes import AssetCode
from apps.console.twofactor import two_factor_exempt
from apps.core.api.exceptions import problem_response
from apps.core.api.parsers import loads_bounded
from apps.core.api.serializers import StrictSerializer
from apps.core.errors import DomainError
from apps.core.view_scope import unscoped
from apps.eventing.transports import webhook_signature


class CallbackRefused(DomainError):
    status = 401
    title = "Callback refused"


class CallbackSerializer(StrictSerializer):
    workflow_instance_id = serializers.UUIDField()
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    reason = serializers.CharField(required=False, allow_blank=True, default="")


def verify_signature(request) -> str:
    """The callback's id when `webhook-id`/`webhook-timestamp`/`webhook-signature` prove it
    came from the Workflow Service recently; CallbackRefused otherwise."""
    secret = settings.STEWARD_WORKFLOW_CALLBACK_SECRET
    if not secret:
        raise CallbackRefused("Callbacks are not configured.", code=AssetCode.CALLBACKS_DISABLED)
    meta = request.META  # the headers mapping would be built for these three look-ups
    callback_id = meta.get("HTTP_WEBHOOK_ID", "")
    stamp = meta.get("HTTP_WEBHOOK_TIMESTAMP", "")
    signature = meta.get("HTTP_WEBHOOK_SIGNATURE", "")
    if not (callback_id and stamp and signature):
        raise CallbackRefused("The callback is not signed.", code=AssetCode.SIGNATURE_MISSING)
    if not (stamp.isascii() and stamp.isdigit()):
        raise CallbackRefused(
            "The callback's webhook-timestamp is not a number of seconds.",
            code=AssetCode.BAD_TIMESTAMP,
        )
    if abs(time.time() - int(stamp)) > settings.STEWARD_WORKFLOW_CALLBACK_TOLERANCE_SECONDS:
        raise CallbackRefused("The callback's timestamp is stale.", code=AssetCode.STALE_TIMESTAMP)
    expected = webhook_signature(secret.encode(), callback_id, int(stamp), request.body)
    if not any(hmac.compare_digest(given, expected) for given in signature.split()):
        raise CallbackRefused(
            "The callback's signature does not match.", code=AssetCode.BAD_SIGNATURE
        )
    return callback_id


DECISIONS = ("approve", "reject")
CALLBACK_FIELDS = frozenset(CallbackSerializer._declared_fields)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")  # as DRF's strict JSON parser refuses it


def plain_callback(request) -> tuple[uuid.UUID, str, str] | None:
    """(instance, decision, reason) of a JSON body that `CallbackSerializer` would take
    exactly as it is (reason trimmed, as the serializer trims it); None for any other
    body, which then goes through DRF and the serializer, who answer it.

    Nearly every callback is this plain, and DRF's request, parser, serializer and
    negotiation cost a third of the endpoint's CPU: the common case skips them. Only
    what the serializer surely accepts unchanged passes; tests/assets/test_callbacks.py
    holds the two to the same answers.
    """
    charset = request.content_params.get("charset", "utf-8").lower()
    if request.content_type != "application/json" or charset != "utf-8":
        return None
    try:
        data = loads_bounded(request.body.decode(), parse_constant=_refuse_constant)
    except ValueError:  # not UTF-8, not JSON, or nested too deeply (JsonTooDeep)
        return None
    if not isinstance(data, dict) or not data.keys() <= CALLBACK_FIELDS:
        return None
    instance, decision = data.get("workflow_instance_id"), data.get("decision")
    reason = data.get("reason", "")
    if not (isinstance(instance, str) and decision in DECISIONS and isinstance(reason, str)):
        return None
    if "\x00" in reason:
        return None
    try:
        reason.encode()  # lone surrogates, which the serializer refuses, do not encode
        return uuid.UUID(instance), decision, reason.strip()
    except ValueError:
        return None


def _record(*, callback_id: str, instance: uuid.UUID, decision: str, reason: str):
    receipt = services.callback_receive(
        workflow_instance_id=instance,
        approve=decision == "approve",
        reason=reason,
        callback_id=callback_id,
    )
    if not receipt.known:
        # Answered, not raised: raising would roll back the receipt operators need.
        return problem_response(
            status_code=404,
            code=AssetCode.UNKNOWN_WORKFLOW_INSTANCE,
            title="Unknown workflow instance",
            detail="No asset waits on this workflow instance.",
            receipt=receipt.id,
        )
    body = json.dumps({"receipt": receipt.id})
    return HttpResponse(body, status=202, content_type="application/json")


@unscoped  # signed, not signed in: the service picks the scope once it knows the asset
@two_factor_exempt  # nor does a session play any part
class WorkflowCallbackView(APIView):
    """Decisions from the Workflow Service, signed like Steward's own webhooks
    (HMAC-SHA256 of `id.timestamp.body`, see docs/integration.md). Answered 202 once
    recorded; a worker applies the decision, once, whatever the number of duplicates."""

    authentication_classes: list = []  # the signature is the authentication
    permission_classes = [AllowAny]
    # The Workflow Service is one caller sending many callbacks: a per-address limit
    # meant for people would throttle it. The signature check is the gate.
    throttle_classes: list = []

    def dispatch(self, request, *args, **kwargs):
        # A signed, plain callback is recorded here, past DRF's dispatch; everything else
        # (refusals included: verified again below) takes DRF's path and its answers.
        if request.method == "POST":
            try:
                callback_id = verify_signature(request)
            except CallbackRefused:
                callback_id = None
            plain = callback_id and plain_callback(request)
            if plain:
                instance, decision, reason = plain
                return _record(
                    callback_id=callback_id, instance=instance, decision=decision, reason=reason
                )
        return super().dispatch(request, *args, **kwargs)

    @extend_schema(
        request=CallbackSerializer,
        responses={202: OpenApiResponse(description="Recorded; a worker applies the decision.")},
    )
    def post(self, request):
        callback_id = verify_signature(request)
        payload = CallbackSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        return _record(
            callback_id=callback_id,
            instance=data["workflow_instance_id"],
            decision=data["decision"],
            reason=data["reason"],
        )
