"""The compute console: batches, and the outstanding links operators watch."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.compute.models import WorkflowBatchLink
from apps.core.scope import tenant_scope
from tests.compute.factories import batches_added_to, submit
from tests.query_counts import assert_flat_query_count


@pytest.mark.django_db
def test_operators_see_outstanding_links_with_the_stale_ones_marked(
    client, operator, tenant_a, settings
):
    old, fresh = submit(tenant_a, step="old"), submit(tenant_a, step="fresh")
    with tenant_scope(tenant_a):
        WorkflowBatchLink.objects.filter(batch_id=old.pk).update(
            created_at=timezone.now() - timedelta(hours=3)
        )
    client.force_login(operator)
    page = client.get("/compute/links/", {"stale": "true"})
    assert [link.batch_id for link in page.context["object_list"]] == [old.pk]
    assert client.get("/compute/links/").status_code == 200
    assert fresh.pk in {
        link.batch_id for link in client.get("/compute/links/").context["object_list"]
    }


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/compute/", "/compute/links/"])
def test_compute_list_pages_query_count_does_not_grow(client, operator, tenant_a, tenant_b, url):
    client.force_login(operator)
    assert_flat_query_count(batches_added_to(tenant_a, tenant_b), lambda: client.get(url))
