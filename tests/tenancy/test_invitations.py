"""Membership by consent (Issue #19, part 3, finding 1): a tenant admin invites, the
person accepts or declines, an open session never moves, operators are not for tenant
admins to add, and the answer never tells whether a username exists (finding 5)."""

import pytest
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import AuditEvent, Membership
from tests.factories import UserFactory, member

pytestmark = pytest.mark.django_db

MEMBERSHIPS = "/api/v1/tenancy/memberships/"
INVITATIONS = "/api/v1/tenancy/invitations/"
ASSETS = "/api/v1/assets/assets/"


def memberships_of(username):
    with system_scope():
        return list(
            Membership.objects.filter(user__username=username).values("tenant__slug", "pending")
        )


@pytest.fixture
def victim(tenant_b):
    return member(tenant_b, username="globex-member")


def test_adding_an_existing_person_is_an_invitation_that_grants_nothing(api, admin_a, victim):
    api.force_login(admin_a)
    answer = api.post(MEMBERSHIPS, {"username": "globex-member", "role": "member"})
    assert answer.status_code == 202
    assert {"tenant__slug": "alpha", "pending": True} in memberships_of("globex-member")
    # The admin's member list does not show it, and the person cannot act in alpha.
    listed = [m["user"] for m in api.get(MEMBERSHIPS).json()["results"]]
    assert "globex-member" not in listed


def test_an_open_session_never_moves_to_the_inviting_tenant(api, tenant_a, victim):
    # The probe: the victim's default tenant was their alphabetically first membership,
    # so alpha's admin adding them moved their open session into alpha.
    from rest_framework.test import APIClient

    session = APIClient()
    session.force_login(victim)
    assert session.get("/api/v1/whoami/").json()["tenant"] == "bravo"
    # Even a membership made directly, without an invitation:
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_a, user=victim, role="member")
    assert session.get("/api/v1/whoami/").json()["tenant"] == "bravo"


def test_the_person_accepts_and_keeps_acting_for_their_tenant(api, admin_a, victim):
    api.force_login(admin_a)
    api.post(MEMBERSHIPS, {"username": "globex-member", "role": "admin"})
    api.force_login(victim)
    before = api.get("/api/v1/whoami/").json()["tenant"]
    (invitation,) = api.get(INVITATIONS).json()
    assert invitation["tenant"] == "alpha" and invitation["role"] == "admin"
    accepted = api.post(f"{INVITATIONS}{invitation['id']}/accept/")
    assert accepted.status_code == 200 and accepted.json()["tenant"] == "alpha"
    assert {"tenant__slug": "alpha", "pending": False} in memberships_of("globex-member")
    assert api.get("/api/v1/whoami/").json()["tenant"] == before
    assert api.get(INVITATIONS).json() == []
    with system_scope():
        actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"membership.invite", "membership.accept"} <= actions


def test_the_person_declines_and_nothing_remains(api, admin_a, victim):
    api.force_login(admin_a)
    api.post(MEMBERSHIPS, {"username": "globex-member", "role": "member"})
    api.force_login(victim)
    (invitation,) = api.get(INVITATIONS).json()
    assert api.post(f"{INVITATIONS}{invitation['id']}/decline/").status_code == 204
    assert memberships_of("globex-member") == [{"tenant__slug": "bravo", "pending": False}]
    with system_scope():
        assert AuditEvent.objects.filter(action="membership.decline").exists()


def test_nobody_else_answers_an_invitation(api, admin_a, victim):
    api.force_login(admin_a)
    api.post(MEMBERSHIPS, {"username": "globex-member", "role": "member"})
    with system_scope():
        pk = Membership.objects.get(user=victim, pending=True).pk
    answer = api.post(f"{INVITATIONS}{pk}/accept/")  # the inviting admin
    assert answer.status_code == 404 and answer.json()["code"] == "invitation_not_found"
    assert {"tenant__slug": "alpha", "pending": True} in memberships_of("globex-member")


def test_a_tenant_admin_cannot_add_an_operator(api, admin_a, operator):
    api.force_login(admin_a)
    answer = api.post(MEMBERSHIPS, {"username": operator.username, "role": "admin"})
    assert answer.status_code == 202  # answered like any invitation
    assert memberships_of(operator.username) == []


def test_inviting_an_unknown_username_answers_exactly_like_a_known_one(api, admin_a, victim):
    api.force_login(admin_a)
    known = api.post(MEMBERSHIPS, {"username": "globex-member", "role": "member"})
    unknown = api.post(MEMBERSHIPS, {"username": "no-such-person", "role": "member"})
    assert known.status_code == unknown.status_code == 202
    assert {k: v for k, v in known.json().items() if k != "username"} == {
        k: v for k, v in unknown.json().items() if k != "username"
    }
    assert known["Content-Type"] == unknown["Content-Type"]
    # Nor does the tenant's audit trail tell them apart.
    with system_scope():
        invites = AuditEvent.objects.filter(action="membership.invite").count()
    assert invites == 2


def test_the_console_page_accepts_and_declines(client, admin_a, victim, tenant_a):
    services.membership_invite(
        actor=SYSTEM_ACTOR, tenant=tenant_a, username="globex-member", role="member"
    )
    client.force_login(victim)
    page = client.get(reverse("console:invitations"))
    assert page.status_code == 200 and b"alpha" in page.content
    with system_scope():
        pk = Membership.objects.get(user=victim, pending=True).pk
    client.post(reverse("console:invitations"), {"invitation": pk, "answer": "accept"})
    assert {"tenant__slug": "alpha", "pending": False} in memberships_of("globex-member")
    assert b"No invitation waits" in client.get(reverse("console:invitations")).content


def test_the_console_add_member_form_invites(client, admin_a, tenant_a):
    UserFactory(username="joiner")
    client.force_login(admin_a)
    client.post(
        reverse("console:membership-add", args=[tenant_a.pk]),
        {"username": "joiner", "role": "member"},
    )
    assert memberships_of("joiner") == [{"tenant__slug": "alpha", "pending": True}]
