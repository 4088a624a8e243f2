"""The Workflow Service's callback endpoint: verify, record, queue, answer 202."""

from __future__ import annotations

import hmac
import time

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.assets import services
from apps.core.api.exceptions import problem
from apps.core.api.serializers import StrictSerializer
from apps.core.errors import DomainError
from apps.eventing.transports import webhook_signature
from apps.tenancy.middleware import unscoped


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
        raise CallbackRefused("Callbacks are not configured.", code="callbacks_disabled")
    meta = request.META  # the headers mapping would be built for these three look-ups
    callback_id = meta.get("HTTP_WEBHOOK_ID", "")
    stamp = meta.get("HTTP_WEBHOOK_TIMESTAMP", "")
    signature = meta.get("HTTP_WEBHOOK_SIGNATURE", "")
    if not (callback_id and stamp.isdigit() and signature):
        raise CallbackRefused("The callback is not signed.", code="signature_missing")
    if abs(time.time() - int(stamp)) > settings.STEWARD_WORKFLOW_CALLBACK_TOLERANCE_SECONDS:
        raise CallbackRefused("The callback's timestamp is stale.", code="stale_timestamp")
    expected = webhook_signature(secret.encode(), callback_id, int(stamp), request.body)
    if not any(hmac.compare_digest(given, expected) for given in signature.split()):
        raise CallbackRefused("The callback's signature does not match.", code="bad_signature")
    return callback_id


@unscoped  # signed, not signed in: the service picks the scope once it knows the asset
class WorkflowCallbackView(APIView):
    """Decisions from the Workflow Service, signed like Steward's own webhooks
    (HMAC-SHA256 of `id.timestamp.body`, see docs/integration.md). Answered 202 once
    recorded; a worker applies the decision, once, whatever the number of duplicates."""

    authentication_classes: list = []  # the signature is the authentication
    permission_classes = [AllowAny]
    # The Workflow Service is one caller sending many callbacks: a per-address limit
    # meant for people would throttle it. The signature check is the gate.
    throttle_classes: list = []

    @extend_schema(
        request=CallbackSerializer,
        responses={202: OpenApiResponse(description="Recorded; a worker applies the decision.")},
    )
    def post(self, request):
        callback_id = verify_signature(request)
        payload = CallbackSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        receipt = services.callback_receive(
            workflow_instance_id=data["workflow_instance_id"],
            approve=data["decision"] == "approve",
            reason=data["reason"],
            callback_id=callback_id,
        )
        if not receipt.known:
            # Answered, not raised: raising would roll back the receipt operators need.
            return problem(
                status_code=404,
                code="unknown_workflow_instance",
                title="Unknown workflow instance",
                detail="No asset waits on this workflow instance.",
                receipt=receipt.id,
            )
        return Response({"receipt": receipt.id}, status=status.HTTP_202_ACCEPTED)
