"""The registry console: approvals waiting on consumers, a version beside the one before,
the list pages, and the same answers as the API to the same acts (apps.registry.views)."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from rest_framework.test import APIClient

from apps.registry.models import SchemaVersion
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count, queries_for
from tests.registry.factories import (
    V1,
    V2_BREAKING,
    add_catalog_rows,
    add_versions,
    pending,
    sync,
    waiting_version,
)

pytestmark = pytest.mark.django_db


def test_approvals_list_the_consumers_still_to_acknowledge(client, operator):
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    client.force_login(operator)
    page = client.get("/registry/approvals/")
    [row] = page.context["object_list"]
    assert row.awaiting_names == "billing, ledger"
    few = queries_for(lambda: client.get("/registry/approvals/"))
    sync("r3", V1, name="orders.refund")
    sync("r4", V2_BREAKING, name="orders.refund")
    assert SchemaVersion.objects.filter(state="awaiting_acknowledgement").count() == 2
    assert queries_for(lambda: client.get("/registry/approvals/")) == few


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


# --------------------------------------------------------------------------- console and API


def test_console_and_api_refuse_a_non_producer_withdrawing_a_version_alike(client, operator):
    """The rule is the service's (schemas.withdraw_version): billing's token may not
    withdraw what orders produces, whichever way in it takes. The console used to
    withdraw it."""
    version = waiting_version()
    stranger = service_token(scopes=["registry:write"], name="billing")
    api = bearer(APIClient(), stranger).post(
        f"/api/v1/registry/schema-versions/{version.pk}/withdraw/", {"reason": "x"}, format="json"
    )
    # The same token on a console request, beside an operator's session: the token
    # speaks for the request, as everywhere.
    client.force_login(operator)
    console = client.post(
        f"/registry/versions/{version.pk}/withdraw/",
        {"reason": "x", "confirm": "yes"},
        HTTP_AUTHORIZATION=f"Bearer {stranger.secret}",
    )
    assert api.status_code == console.status_code == 403
    assert api.json()["detail"] == "billing does not produce orders.order."
    assert pending().pk == version.pk  # still waiting


def test_console_and_api_refuse_an_override_without_the_permission_alike(client, api, operator):
    version = waiting_version()
    api.force_login(operator)
    refused = api.post(
        f"/api/v1/registry/schema-versions/{version.pk}/override/", {"reason": "r"}, format="json"
    )
    client.force_login(operator)
    console = client.post(f"/registry/versions/{version.pk}/override/", {"reason": "r"})
    assert refused.status_code == console.status_code == 403
    assert pending().pk == version.pk


def test_console_and_api_let_an_operator_acknowledge_for_a_consumer_alike(client, api, operator):
    version = waiting_version()
    api.force_login(operator)
    by_api = api.post(
        f"/api/v1/registry/schema-versions/{version.pk}/acknowledge/",
        {"consumer": "billing"},
        format="json",
    )
    assert by_api.status_code == 200 and by_api.json()["awaiting"] == ["ledger"]
    client.force_login(operator)
    by_console = client.post(
        f"/registry/versions/{version.pk}/acknowledge/", {"consumer": "ledger"}
    )
    assert by_console.status_code == 302
    version.refresh_from_db()
    assert version.state == "published"


# --------------------------------------------------------------------------- list query counts


@pytest.mark.parametrize(
    "url_name, add_rows",
    [
        ("registry:topic-list", add_catalog_rows),
        ("registry:subscription-list", add_catalog_rows),
        ("registry:approval-list", add_versions),
        ("registry:version-list", add_versions),
    ],
)
def test_list_pages_query_count_does_not_grow(client, operator, url_name, add_rows):
    client.force_login(operator)
    assert_flat_query_count(add_rows, lambda: client.get(reverse(url_name)))
