"""Tenancy's services: the platform catalog's writes, validated and audited."""

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import AuditEvent, Region
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def audit_of(action: str, region: Region) -> AuditEvent:
    with system_scope():
        return AuditEvent.objects.get(action=action, object_id=str(region.pk))


def test_a_catalog_row_is_created_from_keyword_arguments_and_audited():
    region = services.catalog_create(
        actor=SYSTEM_ACTOR, model=Region, slug="swedencentral", name="Sweden Central"
    )
    assert Region.objects.get(slug="swedencentral").name == "Sweden Central"
    assert audit_of("region.create", region).changes == {
        "name": [None, "Sweden Central"],
        "slug": [None, "swedencentral"],
    }


def test_a_catalog_change_audits_each_changed_field_before_and_after(region):
    services.catalog_update(
        actor=SYSTEM_ACTOR, instance=region, name="West Europe", jurisdiction="EU"
    )
    assert Region.objects.get(pk=region.pk).name == "West Europe"
    assert audit_of("region.update", region).changes == {"name": ["Westeurope", "West Europe"]}


def test_a_catalog_change_full_clean_refuses_saves_nothing(region):
    with pytest.raises(ValidationFailed) as refused:
        services.catalog_update(actor=SYSTEM_ACTOR, instance=region, slug="not a slug")
    assert refused.value.code == "invalid" and "slug" in refused.value.detail
    assert Region.objects.get(pk=region.pk).slug == "westeurope"
    with system_scope():
        assert not AuditEvent.objects.filter(action="region.update").exists()


def test_a_catalog_row_in_use_cannot_be_deleted(region):
    TenantFactory(home_region=region)
    with pytest.raises(Conflict) as refused:
        services.catalog_delete(actor=SYSTEM_ACTOR, instance=region)
    assert refused.value.code == "in_use"
    assert Region.objects.filter(pk=region.pk).exists()
