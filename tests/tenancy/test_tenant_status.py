"""A tenant's status means what it says, checked once for the API and the console
(Issue #19, part 3, finding 2)."""

import pytest
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.tenancy import services
from apps.tenancy.models import TOKEN_SCOPES
from tests.conftest import bearer
from tests.factories import member, service_token

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"
WRITES = [
    ("post", "/api/v1/assets/assets/"),
    ("post", "/api/v1/compute/batches/"),
    ("post", "/api/v1/stores/bindings/"),
]


def set_status(tenant, status):
    return services.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant, status=status)


@pytest.fixture
def tenant_api(api, tenant_a):
    return bearer(api, service_token(tenant=tenant_a, scopes=TOKEN_SCOPES))


@pytest.mark.parametrize("method, url", WRITES)
def test_an_active_tenant_s_service_reaches_the_view(tenant_api, method, url):
    answer = getattr(tenant_api, method)(url, {}, format="json")
    assert answer.status_code == 400  # the view read the (empty) body


@pytest.mark.parametrize(
    "status, code", [("suspended", "tenant_suspended"), ("offboarding", "tenant_offboarding")]
)
@pytest.mark.parametrize("method, url", WRITES)
def test_a_suspended_or_offboarding_tenant_s_service_reads_but_cannot_write(
    tenant_api, tenant_a, status, code, method, url
):
    set_status(tenant_a, status)
    answer = getattr(tenant_api, method)(url, {}, format="json")
    assert answer.status_code == 403 and answer["Content-Type"] == PROBLEM
    assert answer.json()["code"] == code
    assert tenant_api.get("/api/v1/assets/assets/").status_code == 200


def test_a_deleted_tenant_s_service_cannot_act_at_all(tenant_api, tenant_a):
    set_status(tenant_a, "deleted")
    for method, url in [*WRITES, ("get", "/api/v1/assets/assets/"), ("get", "/api/v1/whoami/")]:
        answer = (
            getattr(tenant_api, method)(url, {}, format="json")
            if method == "post"
            else (tenant_api.get(url))
        )
        assert answer.status_code == 403, url
        assert answer.json()["code"] == "tenant_deleted"


def test_governance_work_goes_on_while_a_tenant_is_offboarding(tenant_api, tenant_a):
    set_status(tenant_a, "offboarding")
    # Not refused for the status: the governance view answers it (here: no such task).
    answer = tenant_api.post(
        "/api/v1/governance/tasks/00000000-0000-0000-0000-000000000000/complete/", {}
    )
    assert answer.json().get("code") not in ("tenant_offboarding", "tenant_suspended")


def test_operators_and_platform_services_act_for_a_suspended_tenant(api, tenant_a, operator):
    set_status(tenant_a, "suspended")
    platform = bearer(api, service_token(scopes=TOKEN_SCOPES))
    answer = platform.post("/api/v1/compute/batches/", {"tenant": tenant_a.slug}, format="json")
    assert answer.status_code == 400 and answer.json()["code"] == "invalid"  # reached the view


def test_a_suspended_tenant_s_person_reads_the_console_but_cannot_write(client, tenant_a, tenant_b):
    admin = member(tenant_a, role="admin", username="admin-s")
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=admin, role="admin")
    client.force_login(admin)
    client.post(reverse("console:switch-tenant"), {"tenant": str(tenant_a.pk)})
    set_status(tenant_a, "suspended")
    assert client.get(reverse("console:dashboard")).status_code == 200
    refused = client.post(reverse("console:tenant-edit", args=[tenant_a.pk]), {"name": "x"})
    assert refused.status_code == 403
    # Their own acts that change no tenant's data stay open: switching, signing out.
    switched = client.post(reverse("console:switch-tenant"), {"tenant": str(tenant_b.pk)})
    assert switched.status_code == 302
    assert client.post(reverse("console:logout")).status_code == 302


def test_a_deleted_tenant_s_person_cannot_even_read(client, tenant_a):
    person = member(tenant_a, username="member-d")
    client.force_login(person)
    set_status(tenant_a, "deleted")
    assert client.get(reverse("console:dashboard")).status_code == 403
    assert client.get("/api/v1/assets/assets/").json()["code"] == "tenant_deleted"


def test_nothing_brings_a_deleted_or_offboarding_tenant_back(tenant_a):
    from apps.core.errors import InvalidTransition
    from apps.tenancy.models import Tenant

    set_status(tenant_a, "offboarding")
    with pytest.raises(InvalidTransition):
        set_status(tenant_a, "active")
    services.tenant_set_lifecycle_status(tenant_id=tenant_a.pk, status="deleted")
    with pytest.raises(InvalidTransition):
        set_status(Tenant.objects.get(pk=tenant_a.pk), "active")
    assert Tenant.objects.get(pk=tenant_a.pk).status == "deleted"
