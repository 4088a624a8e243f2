"""The registry console: approvals waiting on consumers, a version beside the one before."""

import pytest
from django.contrib.auth.models import Permission

from apps.registry.models import SchemaVersion
from tests.console.test_views import list_page_queries
from tests.registry.test_schemas import V1, V2_BREAKING, sync

pytestmark = pytest.mark.django_db


def test_approvals_list_the_consumers_still_to_acknowledge(client, operator):
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    client.force_login(operator)
    page = client.get("/registry/approvals/")
    [row] = page.context["object_list"]
    assert row.awaiting_names == "billing, ledger"
    few = list_page_queries(client, "/registry/approvals/")
    sync("r3", V1, name="orders.refund")
    sync("r4", V2_BREAKING, name="orders.refund")
    assert SchemaVersion.objects.filter(state="awaiting_acknowledgement").count() == 2
    assert list_page_queries(client, "/registry/approvals/") == few


def test_the_version_page_shows_the_diff_and_an_operator_with_the_permission_overrides(
    client, operator
):
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    version = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    client.force_login(operator)
    page = client.get(version.get_absolute_url())
    text = page.content.decode()
    assert "breaking" in text and "Waiting on: billing, ledger" in text
    assert any(changed for _, _, changed in page.context["lines"])
    assert "Publish anyway" not in text  # the permission is needed too
    operator.user_permissions.add(Permission.objects.get(codename="override_schemaversion"))
    client.post(f"/registry/versions/{version.pk}/override/", {"reason": "consumers retired"})
    version.refresh_from_db()
    assert version.state == "published" and version.override_reason == "consumers retired"


def test_a_version_action_needs_a_signed_in_operator(client):
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    version = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    answer = client.post(f"/registry/versions/{version.pk}/remind/")
    assert answer.status_code == 302 and "/login/" in answer["Location"]
