"""The asset list built from rows (apps.core.api.rows) answers exactly what the
AssetSerializer answers, over generated assets in every state."""

import json
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from apps.assets.api.serializers import ASSET_ROWS, AssetSerializer
from apps.assets.models import Asset
from apps.core.api.renderers import FastJSONRenderer, datetimes_in_utc
from apps.core.scope import system_scope, tenant_scope
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import every_page

ASSETS = "/api/v1/assets/assets/"
pytestmark = pytest.mark.django_db

TEXTS = ["", "plain", "ünïcödé ✓", 'quote " and \\ backslash', "line\nbreak", "x" * 200]


def _when(rng: random.Random) -> datetime:
    # Microseconds included: the representation must keep them as DRF does.
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(
        seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6)
    )


def _instance(rng: random.Random, status: str):
    # A draft never had a workflow instance (asset_workflow_reference_after_request).
    if status == Asset.Status.DRAFT:
        return None
    return rng.choice([None, uuid.UUID(int=rng.getrandbits(128))])


def _generated_assets(rng: random.Random, tenants, count: int) -> None:
    statuses = [rng.choice(Asset.Status.values) for _ in range(count * len(tenants))]
    for n, tenant in enumerate(tenants):
        with tenant_scope(tenant):
            Asset.objects.bulk_create(
                Asset(
                    tenant=tenant,
                    name=rng.choice(TEXTS) or "n",
                    description=rng.choice(TEXTS),
                    status=status,
                    workflow_instance_id=_instance(rng, status),
                    workflow_link_stale=rng.random() < 0.3,
                    delegation_failure=rng.choice(Asset.DelegationFailure.values + [""]),
                    status_reason=rng.choice(TEXTS),
                    decided_at=rng.choice([None, _when(rng)]),
                    decided_by=rng.choice(TEXTS)[:150],
                    decision_reason=rng.choice(TEXTS),
                    created_at=_when(rng),
                )
                for status in statuses[n * count : (n + 1) * count]
            )


def _serializer_answer(queryset) -> list[dict]:
    return json.loads(JSONRenderer().render(AssetSerializer(queryset, many=True).data))


@pytest.mark.parametrize("seed", range(4))
def test_the_row_list_answers_what_the_serializer_answers(seed, api, tenant_a, tenant_b):
    # given assets drawn at random, in both tenants
    rng = random.Random(seed)
    _generated_assets(rng, [tenant_a, tenant_b], 30)
    # when a platform service lists them all, in pages
    client = bearer(api, service_token(scopes=["assets:read"]))
    listed = every_page(client, f"{ASSETS}?page_size=25")
    # then every row is the serializer's representation of that asset, in the same order
    with system_scope():
        expected = _serializer_answer(
            Asset.objects.select_related("tenant").order_by("-created_at")
        )
    assert listed == expected


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns"])
def test_the_row_shape_renders_the_serializers_bytes_row_by_row(tenant_a, zone):
    # In each current time zone (the API's is UTC; others take DRF's conversion), each
    # row renders to the serializer's bytes, field order included: by the list's own
    # renderer as the list's response marks it, and by DRF's.
    rng = random.Random(99)
    _generated_assets(rng, [tenant_a], 60)
    with timezone.override(zone), tenant_scope(tenant_a):
        queryset = Asset.objects.select_related("tenant").order_by("pk")
        rows = [ASSET_ROWS.represent(row) for row in queryset.values(*ASSET_ROWS.lookups())]
        serialized = list(AssetSerializer(queryset, many=True).data)
    expected = JSONRenderer().render(serialized)
    marked = {"response": datetimes_in_utc(Response())}
    assert FastJSONRenderer().render(rows, renderer_context=marked) == expected
    assert JSONRenderer().render(rows) == expected
    assert all(isinstance(row["created_at"], str) for row in rows) is (zone != "UTC")
