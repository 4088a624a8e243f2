"""Reads of the tenancy app. Row-level security already limits rows to the caller's
scope; these add the joins each page and endpoint needs, done once."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import Count, Q, QuerySet

from apps.core.scope import system_scope
from apps.tenancy import auth_cache, totp
from apps.tenancy.models import (
    ApiToken,
    AuditEvent,
    DataClass,
    Membership,
    RecoveryCode,
    Region,
    ServiceAccount,
    Tenant,
    TotpDevice,
    User,
)


def tenant_by_id(tenant_id) -> Tenant | None:
    try:
        return (
            Tenant.objects.select_related("home_region")
            .filter(pk=uuid.UUID(str(tenant_id)))
            .first()
        )
    except ValueError:
        return None


def tenants_visible_to(*, platform_wide: bool, tenant: Tenant | None) -> QuerySet[Tenant]:
    """Operators and platform services see every tenant; everyone else the one they act for."""
    qs = Tenant.objects.select_related("home_region")
    if platform_wide and tenant is None:
        return qs
    return qs.filter(pk=tenant.pk) if tenant is not None else qs.none()


SWITCHABLE_TENANTS = 200


def operator_tenant_choices() -> list[tuple[str, str]]:
    """The first SWITCHABLE_TENANTS tenants by slug, as (id, slug): what an operator's
    tenant switcher offers on every page, served from the auth cache while no tenant
    changed. Stored only once the request's transaction commits, so a tenant it made
    and then rolled back is never offered."""
    choices, generation = auth_cache.tenant_choices_lookup()
    if choices is None:
        everyone = tenants_visible_to(platform_wide=True, tenant=None)
        choices = [
            (str(pk), slug) for pk, slug in everyone.values_list("id", "slug")[:SWITCHABLE_TENANTS]
        ]
        transaction.on_commit(lambda: auth_cache.tenant_choices_store(choices, generation))
    return choices


def tenant_list(*, platform_wide: bool, tenant: Tenant | None) -> QuerySet[Tenant]:
    # Members only: counting pending invitations would tell a tenant admin which of
    # the usernames they invited exist.
    return tenants_visible_to(platform_wide=platform_wide, tenant=tenant).annotate(
        member_count=Count("memberships", filter=Q(memberships__pending=False), distinct=True)
    )


def memberships_of(user: User) -> list[Membership]:
    """All tenants a person belongs to, whatever the current scope (for the switcher)."""
    with system_scope():
        return list(
            Membership.objects.select_related("tenant", "tenant__home_region")
            .filter(user=user, pending=False)
            .order_by("tenant__slug")
        )


def memberships_of_caller(user: User) -> list[Membership]:
    """`memberships_of` for the request path, served from the auth cache while it holds
    them as they are (apps.tenancy.auth_cache). Outside any transaction only: a read
    inside one could cache what it later rolls back."""
    memberships, generation = auth_cache.memberships_lookup(user.pk)
    if memberships is None:
        memberships = memberships_of(user)
        auth_cache.memberships_store(user.pk, memberships, generation)
    return memberships


def membership_list(*, include_pending: bool = False) -> QuerySet[Membership]:
    """Memberships the scope sees. Invitations not yet accepted are left out: whether a
    username was invited must not tell a tenant admin that the person exists."""
    memberships = Membership.objects.select_related("tenant", "user")
    return memberships if include_pending else memberships.filter(pending=False)


# The tenant's audit actions that settle what became of an invited username.
_INVITATION_ACTIONS = (
    "membership.invite",
    "membership.withdraw",
    "membership.accept",
    "membership.set",
    "membership.remove",
)
INVITATIONS_SHOWN = 50


def invitations_sent(tenant: Tenant) -> list[dict]:
    """The invitations the tenant sent and neither withdrew nor saw accepted, newest
    first, read from its own audit trail: the usernames its admins typed, alike whether
    anyone has them. Not from the pending rows, which exist only for real people; and
    a person's decline is not in the tenant's trail, so it reads as no answer yet."""
    events = (
        AuditEvent.objects.filter(tenant=tenant, action__in=_INVITATION_ACTIONS)
        .order_by("-occurred_at", "-id")
        .values("action", "changes", "occurred_at", "actor_label")[: INVITATIONS_SHOWN * 10]
    )
    settled, sent = set(), []
    for event in events:
        before, after = (event["changes"] or {}).get("user") or [None, None]
        username = after or before
        if not username or username in settled:
            continue
        settled.add(username)  # the newest word on a username is the one that counts
        if event["action"] == "membership.invite":
            role = ((event["changes"] or {}).get("role") or [None, None])[1]
            sent.append(
                {
                    "username": username,
                    "role": role,
                    "invited_at": event["occurred_at"],
                    "invited_by": event["actor_label"],
                }
            )
    return sent[:INVITATIONS_SHOWN]


def invitations_of(user: User) -> list[Membership]:
    """The invitations waiting on `user`, from every tenant (only they may answer them)."""
    with system_scope():
        return list(
            Membership.objects.select_related("tenant")
            .filter(user=user, pending=True)
            .order_by("tenant__slug")
        )


def invitation_of(user: User, pk: int) -> Membership | None:
    with system_scope():
        return (
            Membership.objects.select_related("tenant", "user")
            .filter(user=user, pending=True, pk=pk)
            .first()
        )


def region_list() -> QuerySet[Region]:
    return Region.objects.all()


def data_class_list() -> QuerySet[DataClass]:
    return DataClass.objects.all()


def audit_event_list() -> QuerySet[AuditEvent]:
    return AuditEvent.objects.select_related("tenant")


def service_account_list() -> QuerySet[ServiceAccount]:
    return ServiceAccount.objects.select_related("tenant").annotate(
        token_count=Count("tokens", distinct=True)
    )


def api_token_list() -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("service_account", "service_account__tenant")


def totp_device_of(user: User) -> TotpDevice | None:
    return TotpDevice.objects.filter(user=user).first()


def has_second_factor(user: User) -> bool:
    return TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).exists()


def recovery_codes_left(user: User) -> int:
    return RecoveryCode.objects.filter(user=user, used_at__isnull=True).count()


def totp_pending_enrolment(user: User) -> totp.Enrolment | None:
    """The seed of an enrolment waiting for its first code, to show it again; or None."""
    device = totp_device_of(user)
    if device is None or device.confirmed_at is not None:
        return None
    try:
        seed = totp.unseal(device.sealed_seed)
    except totp.SeedUnreadable:
        return None
    return totp.enrolment(seed, account=user.username)


def user_by_username(username: str) -> User | None:
    return User.objects.filter(username=username).first()
