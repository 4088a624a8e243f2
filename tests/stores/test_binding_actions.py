"""The binding page's actions: one toolbar, and retiring asks for its confirmation
(apps.console.confirm)."""

import pytest

from tests.stores.conftest import reload
from tests.stores.factories import provisioned, rule

pytestmark = pytest.mark.django_db


def test_retiring_without_its_confirmation_changes_nothing_and_with_it_retires(
    client, operator, tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    client.force_login(operator)
    page = client.get(f"/stores/bindings/{binding.pk}/").content.decode()
    assert '<summary role="button" class="secondary outline">Retire</summary>' in page
    assert "This will retire the binding" in page and "its credentials are revoked" in page
    client.post(f"/stores/bindings/{binding.pk}/retire/", {"reason": "moved"})
    assert reload(binding).status == "provisioned"
    client.post(f"/stores/bindings/{binding.pk}/retire/", {"reason": "moved", "confirm": "yes"})
    assert reload(binding).status in {"retiring", "retired"}  # retiring, or done already
