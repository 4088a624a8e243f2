"""The workflow_batch_link table: its contracted shape, and row-level security on it."""

import uuid

import pytest
from django.db import DatabaseError, connection, transaction

from apps.compute.models import WorkflowBatchLink
from apps.core.scope import system_scope, tenant_scope
from tests.compute.factories import links, submit


@pytest.mark.django_db
def test_the_link_table_has_exactly_the_contracted_columns_key_and_index():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'workflow_batch_link'"
        )
        columns = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = 'workflow_batch_link'::regclass AND i.indisprimary"
        )
        key = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'workflow_batch_link'"
        )
        indexes = dict(cursor.fetchall())
    assert columns == {
        "batch_id",
        "workflow_step_id",
        "workflow_instance_id",
        "created_at",
        "tenant_id",
    }
    assert key == ["batch_id"]
    assert set(indexes) == {"workflow_batch_link_pkey", "workflow_batch_links_tenant"}
    assert "(tenant_id)" in indexes["workflow_batch_links_tenant"]


@pytest.mark.django_db
def test_tenants_see_their_links_the_system_sees_all_and_deletes_none(tenant_a, tenant_b):
    a, b = submit(tenant_a), submit(tenant_b)
    with tenant_scope(tenant_a):
        assert set(WorkflowBatchLink.objects.values_list("batch_id", flat=True)) == {a.pk}
    with system_scope():
        assert set(WorkflowBatchLink.objects.values_list("batch_id", flat=True)) == {a.pk, b.pk}
        assert WorkflowBatchLink.objects.filter(batch_id=b.pk).delete()[0] == 0
    with tenant_scope(tenant_a):
        assert WorkflowBatchLink.objects.filter(batch_id=b.pk).delete()[0] == 0
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            WorkflowBatchLink.objects.create(
                batch_id=uuid.uuid4(),
                workflow_step_id="s",
                workflow_instance_id="i",
                tenant=tenant_b,
            )
    assert links() == {a.pk, b.pk}
