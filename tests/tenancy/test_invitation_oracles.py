"""What a tenant admin sees of invitations tells nothing they did not type themselves
(issue #36 item 10): the Members count counted pending invitations, and removing a
pending invitation by id answered 302 naming the invitee where a missing id was a 404."""

import re

import pytest
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import selectors, services
from apps.tenancy.models import AuditEvent, Membership
from tests.factories import UserFactory, member

pytestmark = pytest.mark.django_db


def invite(client, tenant, username):
    client.post(
        reverse("console:membership-add", args=[tenant.pk]),
        {"username": username, "role": "member"},
    )


def pending_of(username):
    with system_scope():
        return Membership.objects.get(user__username=username, pending=True)


def test_the_members_count_counts_members_not_invitations(client, admin_a, tenant_a):
    UserFactory(username="real-person")
    client.force_login(admin_a)
    invite(client, tenant_a, "real-person")
    invite(client, tenant_a, "nobody-has-this-name")
    with system_scope():
        listed = selectors.tenant_list(platform_wide=True, tenant=None).get(pk=tenant_a.pk)
    assert listed.member_count == 1  # admin-a alone
    client.get(reverse("console:tenant-list"))  # the invitations' notices shown once
    page = client.get(reverse("console:tenant-list")).content.decode()
    assert "real-person" not in page


def test_removing_an_invitation_by_id_answers_as_a_missing_id_does(
    client, admin_a, tenant_a, tenant_b
):
    UserFactory(username="real-person")
    other = UserFactory(username="bravo-invitee")
    client.force_login(admin_a)
    invite(client, tenant_a, "real-person")
    services.membership_invite(
        actor=SYSTEM_ACTOR, tenant=tenant_b, username=other.username, role="member"
    )
    ours, theirs = pending_of("real-person"), pending_of("bravo-invitee")
    answers = [
        client.post(reverse("console:membership-remove", args=[tenant_a.pk, pk]))
        for pk in (ours.pk, theirs.pk, 999_999)
    ]
    assert [a.status_code for a in answers] == [404, 404, 404]
    # alike but for each answer's own request id
    assert len({re.sub(rb"Request id: <code>[^<]*</code>", b"", a.content) for a in answers}) == 1
    for answer in answers:
        assert b"real-person" not in answer.content and b"bravo-invitee" not in answer.content
    with system_scope():
        assert Membership.objects.filter(pending=True).count() == 2


def test_invitations_sent_show_apart_alike_for_real_and_unknown_usernames_and_can_be_withdrawn(
    client, admin_a, tenant_a
):
    UserFactory(username="real-person")
    client.force_login(admin_a)
    invite(client, tenant_a, "real-person")
    invite(client, tenant_a, "nobody-has-this-name")
    page = client.get(reverse("console:tenant-detail", args=[tenant_a.pk]))
    sent = [i["username"] for i in page.context["invitations"]]
    assert sorted(sent) == ["nobody-has-this-name", "real-person"]
    members = [m.user.username for m in page.context["memberships"]]
    assert members == ["admin-a"]
    answers = [
        client.post(reverse("console:invitation-withdraw", args=[tenant_a.pk]), {"username": name})
        for name in ("real-person", "nobody-has-this-name")
    ]
    assert [a.status_code for a in answers] == [302, 302]
    with system_scope():
        assert not Membership.objects.filter(pending=True).exists()
    page = client.get(reverse("console:tenant-detail", args=[tenant_a.pk]))
    assert page.context["invitations"] == []


def test_a_decline_is_not_in_the_inviting_tenant_s_trail(client, admin_a, tenant_a):
    person = UserFactory(username="real-person")
    client.force_login(admin_a)
    invite(client, tenant_a, "real-person")
    invitation = pending_of("real-person")
    from apps.core.context import Actor

    services.membership_decline(actor=Actor(user=person), membership=invitation)
    with system_scope():
        decline = AuditEvent.objects.get(action="membership.decline")
    assert decline.tenant_id is None  # the operators' trail, not the tenant admin's
    page = client.get(reverse("console:tenant-detail", args=[tenant_a.pk]))
    assert "membership.decline" not in page.content.decode()
    # the invitation still reads as sent, as one to an unknown username would
    assert [i["username"] for i in page.context["invitations"]] == ["real-person"]


def test_a_member_s_removal_still_names_them(client, admin_a, tenant_a):
    person = member(tenant_a, username="visible-member")
    client.force_login(admin_a)
    with system_scope():
        membership = Membership.objects.get(user=person)
    answer = client.post(reverse("console:membership-remove", args=[tenant_a.pk, membership.pk]))
    assert answer.status_code == 302
    with system_scope():
        assert not Membership.objects.filter(user=person).exists()
