"""The asset lifecycle beyond approval: retire with a reason, delete a Draft, PATCH
of name and description while not Requested. Every move goes through the transition
table; an illegal one is a 409 with a stable code and changes nothing."""

import pytest

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import InvalidTransition, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import AuditEvent
from tests.assets.factories import events, new_asset, reload, requested
from tests.factories import member
from tests.support import problem

ASSETS = "/api/v1/assets/assets/"
pytestmark = pytest.mark.django_db


def approved(tenant, name="approved"):
    asset = requested(tenant, name, delegate=False)
    return services.asset_decide(actor=SYSTEM_ACTOR, asset=asset, approve=True)


def audit_actions(asset):
    with system_scope():
        return list(
            AuditEvent.objects.filter(object_id=str(asset.pk))
            .order_by("id")
            .values_list("action", "changes")
        )


def test_an_approved_asset_is_retired_with_its_reason_audited_and_announced(tenant_a):
    asset = approved(tenant_a)
    retired = services.asset_retire(actor=SYSTEM_ACTOR, asset=asset, reason="superseded by v4")
    assert retired.status == "retired" and retired.status_reason == "superseded by v4"
    action, changes = audit_actions(asset)[-1]
    assert action == "asset.retire"
    assert changes == {"status": ["approved", "retired"], "status_reason": ["", "superseded by v4"]}
    [(_, payload)] = events("AssetRetired")
    assert payload["reason"] == "superseded by v4" and payload["status"] == "retired"


def test_retiring_needs_a_reason_and_an_asset_once_asked_for(tenant_a):
    asset = approved(tenant_a)
    with pytest.raises(ValidationFailed) as no_reason:
        services.asset_retire(actor=SYSTEM_ACTOR, asset=asset, reason="  ")
    assert no_reason.value.code == "reason_required" and reload(asset).status == "approved"
    draft = new_asset(tenant_a, "draft")
    with pytest.raises(InvalidTransition) as refused:
        services.asset_retire(actor=SYSTEM_ACTOR, asset=draft, reason="gone")
    assert refused.value.code == "invalid_transition" and reload(draft).status == "draft"
    assert [a for a, _ in audit_actions(draft)] == ["asset.create"]


def test_a_draft_is_deleted_and_its_deletion_audited(tenant_a):
    draft = new_asset(tenant_a, "scratch")
    services.asset_delete(actor=SYSTEM_ACTOR, asset=draft)
    with tenant_scope(tenant_a):
        assert not Asset.objects.filter(pk=draft.pk).exists()
    action, changes = audit_actions(draft)[-1]
    assert action == "asset.delete" and changes["status"] == ["draft", None]


@pytest.mark.parametrize("status", ["requested", "approved", "retired"])
def test_only_a_draft_can_be_deleted(tenant_a, status):
    asset = approved(tenant_a) if status != "requested" else requested(tenant_a, delegate=False)
    if status == "retired":
        asset = services.asset_retire(actor=SYSTEM_ACTOR, asset=asset, reason="old")
    with pytest.raises(InvalidTransition) as refused:
        services.asset_delete(actor=SYSTEM_ACTOR, asset=asset)
    assert refused.value.code == "asset_not_deletable"
    assert reload(asset).status == status


def test_name_and_description_change_in_any_status_but_requested(tenant_a):
    draft = new_asset(tenant_a, "old-name")
    renamed = services.asset_update(
        actor=SYSTEM_ACTOR, asset=draft, name="new-name", description="better"
    )
    assert (renamed.name, renamed.description) == ("new-name", "better")
    action, changes = audit_actions(draft)[-1]
    assert action == "asset.update"
    assert changes == {"name": ["old-name", "new-name"], "description": ["", "better"]}
    waiting = requested(tenant_a, "waiting", delegate=False)
    with pytest.raises(InvalidTransition) as refused:
        services.asset_update(actor=SYSTEM_ACTOR, asset=waiting, name="sneaky")
    assert refused.value.code == "asset_awaiting_decision" and reload(waiting).name == "waiting"
    decided = services.asset_decide(actor=SYSTEM_ACTOR, asset=waiting, approve=True)
    assert services.asset_update(actor=SYSTEM_ACTOR, asset=decided, name="renamed").name == (
        "renamed"
    )


def test_the_api_patches_deletes_and_retires_through_the_same_rules(api, tenant_a, admin_a):
    api.force_login(admin_a)
    created = api.post(ASSETS, {"name": "feature-store", "description": "v1"}).json()
    url = f"{ASSETS}{created['id']}/"
    # PATCH of a draft
    patched = api.patch(url, {"description": "v2"}, format="json")
    assert patched.status_code == 200 and patched.json()["description"] == "v2"
    assert patched.json()["status"] == "draft"  # answered in the read shape
    assert api.put(url, {"name": "x"}, format="json").status_code == 405
    problem(api.patch(url, {"status": "approved"}, format="json"), 400, "invalid")
    # PATCH while Requested, DELETE of anything but a draft, retire of a draft
    api.post(f"{url}request-approval/", {"delegate": False})
    body = problem(
        api.patch(url, {"name": "renamed"}, format="json"), 409, "asset_awaiting_decision"
    )
    assert body["current_status"] == "requested"
    problem(api.delete(url), 409, "asset_not_deletable")
    with tenant_scope(tenant_a):
        stored = Asset.objects.get(pk=created["id"])
    assert (stored.name, stored.status) == ("feature-store", "requested")
    # approve, then retire with a reason (none is a 400)
    api.post(f"{url}approve/", {})
    problem(api.post(f"{url}retire/", {}), 400, "invalid")
    retired = api.post(f"{url}retire/", {"reason": "replaced"})
    assert retired.status_code == 200
    assert retired.json()["status"] == "retired" and retired.json()["status_reason"] == "replaced"
    # a draft is not retired (nothing was asked for) but deleted
    draft = api.post(ASSETS, {"name": "scratch"}).json()
    retired = api.post(f"{ASSETS}{draft['id']}/retire/", {"reason": "old"})
    problem(retired, 409, "invalid_transition")
    assert api.delete(f"{ASSETS}{draft['id']}/").status_code == 204
    assert api.get(f"{ASSETS}{draft['id']}/").status_code == 404


def test_retiring_through_the_api_needs_the_right_to_decide(api, tenant_a):
    asset = approved(tenant_a)
    api.force_login(member(tenant_a, username="viewer"))
    problem(api.post(f"{ASSETS}{asset.pk}/retire/", {"reason": "mine"}), 403, "permission_denied")
    assert reload(asset).status == "approved"


def test_the_console_edits_retires_and_deletes(client, tenant_a, admin_a):
    client.force_login(admin_a)
    draft = new_asset(tenant_a, "console-draft")
    page = client.get(f"/assets/{draft.pk}/").content.decode()
    assert "Delete this draft" in page and "Edit name and description" in page
    client.post(f"/assets/{draft.pk}/edit/", {"name": "console-renamed", "description": "d"})
    assert reload(draft).name == "console-renamed"
    assert client.post(f"/assets/{draft.pk}/delete/").status_code == 302
    with tenant_scope(tenant_a):
        assert not Asset.objects.filter(pk=draft.pk).exists()
    asset = approved(tenant_a, "console-approved")
    assert "Retire" in client.get(f"/assets/{asset.pk}/").content.decode()
    client.post(f"/assets/{asset.pk}/retire/", {"reason": ""})
    assert reload(asset).status == "approved"  # refused: no reason
    client.post(f"/assets/{asset.pk}/retire/", {"reason": "end of life"})
    retired = reload(asset)
    assert retired.status == "retired" and retired.status_reason == "end of life"
    assert "end of life" in client.get(f"/assets/{asset.pk}/").content.decode()
