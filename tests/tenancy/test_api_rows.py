"""The tenant list built from rows (apps.core.api.rows) answers exactly what the
TenantSerializer answers, over generated tenants; and RowShape refuses what it
cannot represent rather than answering it differently."""

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from apps.core.api.rows import RowShape
from apps.tenancy.api.serializers import TENANT_ROWS, TenantSerializer
from apps.tenancy.models import Region, Tenant
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import every_page

TENANTS = "/api/v1/tenancy/tenants/"
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("seed", range(3))
def test_the_tenant_row_list_answers_what_the_serializer_answers(seed, api, region):
    # given tenants drawn at random over two regions
    rng = random.Random(seed)
    regions = [region, Region.objects.create(slug=f"r-{seed}", name="Région ✓")]
    Tenant.objects.bulk_create(
        Tenant(
            slug=f"t-{seed}-{n:03d}",
            name=rng.choice(["Plain", "Ünïcödé ✓", 'Quote " \\', "x" * 200]),
            environment_class=rng.choice(Tenant.EnvironmentClass.values),
            home_region=rng.choice(regions),
            status=rng.choice(Tenant.Status.values),
            created_at=datetime(2026, 1, 1, tzinfo=UTC)
            + timedelta(seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6)),
        )
        for n in range(40)
    )
    # when a platform service lists them, in pages, in two orders
    client = bearer(api, service_token())
    for ordering, order_by in (("", "slug"), ("&ordering=-created_at", "-created_at")):
        listed = every_page(client, f"{TENANTS}?page_size=15{ordering}")
        # then each is the serializer's representation, in the same order
        queryset = Tenant.objects.select_related("home_region").order_by(order_by)
        expected = json.loads(JSONRenderer().render(TenantSerializer(queryset, many=True).data))
        assert listed == expected
    assert list(TENANT_ROWS.represent(Tenant.objects.values(*TENANT_ROWS.lookups()).first()))


def test_a_field_row_shape_does_not_know_is_refused_when_the_shape_is_built():
    class Nested(serializers.Serializer):
        region = serializers.CharField(source="home_region.slug")

    class Computed(serializers.Serializer):
        n = serializers.SerializerMethodField()

    class Formatted(serializers.Serializer):
        at = serializers.DateTimeField(format="%Y")

    for serializer in (Nested, Computed, Formatted):
        with pytest.raises(TypeError):
            RowShape(serializer)
