"""The attention queue over the API: `GET /api/v1/attention/` lists what waits on a
person (operators and platform services, e.g. a pager bridge); `POST
/api/v1/attention/{kind}/{key}/{action}/` resolves one item (operators)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.attention import selectors, services
from apps.core.api.permissions import OPERATOR, PLATFORM
from apps.core.api.views import StewardAccessMixin
from apps.core.attention import kinds
from apps.core.codes import CoreCode
from apps.core.errors import ValidationFailed


class InputSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    required = serializers.BooleanField()
    kind = serializers.CharField()


class ActionSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    inputs = InputSerializer(many=True)
    link_only = serializers.BooleanField()
    confirm = serializers.CharField(
        allow_blank=True, help_text="For a destructive action: what it will do."
    )


class ItemSerializer(serializers.Serializer):
    kind = serializers.CharField()
    key = serializers.CharField()
    title = serializers.CharField()
    waiting_for = serializers.CharField()
    since = serializers.DateTimeField()
    tenant = serializers.CharField(allow_blank=True)
    url = serializers.CharField(allow_blank=True)
    actions = ActionSerializer(many=True)


class QueueSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField())
    results = ItemSerializer(many=True)


class ActSerializer(serializers.Serializer):
    result = serializers.CharField()


def _item(group, item) -> dict:
    return {
        "kind": group.kind.slug,
        "key": item.key,
        "title": item.title,
        "waiting_for": item.waiting_for,
        "since": item.since,
        "tenant": item.tenant,
        "url": item.url,
        "actions": group.kind.actions,
    }


class AttentionQueueView(StewardAccessMixin, APIView):
    """Everything waiting on a person, oldest first within each kind; `?kind=` for one."""

    steward_scope = "system"
    scope_app = "attention"
    read_access = PLATFORM

    @extend_schema(
        parameters=[OpenApiParameter("kind", str, enum=list(kinds()) or None)],
        responses=QueueSerializer,
    )
    def get(self, request):
        kind = request.query_params.get("kind") or None
        if kind is not None and kind not in kinds():
            raise ValidationFailed(
                f"There is no kind {kind!r} (one of {', '.join(kinds())}).",
                code=CoreCode.INVALID,
                field="kind",
            )
        groups = selectors.queue(kind)
        items = [_item(group, item) for group in groups for item in group.items]
        body = {
            "count": len(items),
            "counts": {group.kind.slug: group.count for group in groups},
            "results": items,
        }
        return Response(QueueSerializer(body).data)


class AttentionActView(StewardAccessMixin, APIView):
    """Resolve one item by one of its kind's actions, with the action's inputs in the
    body. A refusal is the kind's services' (a stable code, nothing changed); an item
    no longer waiting is 404 `not_in_queue`."""

    steward_scope = "system"
    scope_app = "attention"
    read_access = PLATFORM
    write_access = frozenset({OPERATOR})

    @extend_schema(request=dict, responses=ActSerializer)
    def post(self, request, kind, key, action):
        said = services.item_act(
            actor=request.actor, kind=kind, key=key, action=action, data=request.data
        )
        return Response(ActSerializer({"result": said}).data)
