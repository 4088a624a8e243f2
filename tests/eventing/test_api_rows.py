"""The recent-events list built from rows (apps.core.api.rows) answers exactly what
the RecentEventSerializer answers, over generated events with and without a tenant."""

import json
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.renderers import JSONRenderer

from apps.core.scope import system_scope, tenant_scope
from apps.eventing.api.serializers import RecentEventSerializer
from apps.eventing.models import RecentEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import every_page

RECENT = "/api/v1/eventing/recent-events/"
pytestmark = pytest.mark.django_db


def _when(rng):
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(
        seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6)
    )


@pytest.mark.parametrize("seed", range(3))
def test_the_recent_event_row_list_answers_what_the_serializer_answers(seed, api, tenant_a):
    rng = random.Random(seed)
    for tenant in (tenant_a, None):
        with tenant_scope(tenant) if tenant else system_scope():
            RecentEvent.objects.bulk_create(
                RecentEvent(
                    event_id=uuid.UUID(int=rng.getrandbits(128)),
                    topic=rng.choice(["assets.asset", "tenancy.tenant", "ünï.✓"]),
                    event_type=rng.choice(["AssetApproved", "x" * 100, ""]),
                    tenant=tenant,
                    aggregate_type=rng.choice(["asset", "tenant"]),
                    aggregate_id=str(rng.randrange(10**6)),
                    occurred_at=_when(rng),
                    received_at=_when(rng),
                )
                for _ in range(25)
            )
    client = bearer(api, service_token(scopes=["eventing:read"]))
    listed = every_page(client, f"{RECENT}?page_size=20")
    with system_scope():
        queryset = RecentEvent.objects.select_related("tenant").order_by("-id")
        expected = json.loads(
            JSONRenderer().render(RecentEventSerializer(queryset, many=True).data)
        )
    assert listed == expected
