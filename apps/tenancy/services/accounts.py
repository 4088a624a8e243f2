"""Service accounts and their API tokens: issue, rotate, revoke, authenticate."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError, ValidationFailed
from apps.core.scope import owner_scope, system_scope
from apps.tenancy import auth_cache
from apps.tenancy.audit import audit_record, diff
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import (
    TOKEN_SCOPES,
    ApiToken,
    ServiceAccount,
    Tenant,
)

TOKEN_PREFIX = "stw_"


# --------------------------------------------------------------------------- service accounts


def service_account_create(
    *, actor: Actor, name: str, tenant: Tenant | None = None, description: str = ""
) -> ServiceAccount:
    account = ServiceAccount(name=name, tenant=tenant, description=description)
    # A name is a service's identity across tenants (the registry's producers and
    # consumers, Schema Registry clients' user name), so it stays unique platform-wide.
    # Row-level security hides other tenants' accounts from full_clean's uniqueness
    # check; the database's constraint decides instead, and a name taken anywhere is
    # refused in the same words, saying neither whose nor where.
    account.full_clean(validate_unique=False)
    with owner_scope(tenant):
        try:
            with transaction.atomic():
                account.save()
        except IntegrityError:
            raise ValidationFailed(
                f"The name {name!r} is not available; choose another.",
                code=TenancyCode.NAME_UNAVAILABLE,
                field="name",
            ) from None
        audit_record(
            actor=actor,
            action="service_account.create",
            instance=account,
            tenant=tenant,
            changes=diff({}, {"name": name, "tenant": tenant.slug if tenant else None}),
        )
    return account


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once to the caller; Steward keeps only its digest


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_issue(
    *,
    actor: Actor,
    service_account: ServiceAccount,
    name: str,
    scopes: list[str],
    expires_at: datetime | None = None,
) -> IssuedToken:
    unknown = sorted(set(scopes) - set(TOKEN_SCOPES))
    if unknown:
        raise ValidationFailed(
            f"unknown scopes: {', '.join(unknown)}", code=TenancyCode.UNKNOWN_SCOPE
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationFailed("expires_at must be in the future", code=CoreCode.INVALID_EXPIRY)
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    tenant = service_account.tenant
    with owner_scope(tenant):
        token = ApiToken.objects.create(
            service_account=service_account,
            name=name,
            prefix=prefix,
            digest=token_digest(secret),
            scopes=sorted(set(scopes)),
            expires_at=expires_at,
        )
        audit_record(
            actor=actor,
            action="api_token.issue",
            instance=token,
            tenant=tenant,
            changes={"scopes": [None, token.scopes], "expires_at": [None, str(expires_at)]},
        )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, actor: Actor, token: ApiToken) -> ApiToken:
    tenant = token.service_account.tenant
    with owner_scope(tenant):
        updated = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        auth_cache.invalidate()
        if updated:
            audit_record(actor=actor, action="api_token.revoke", instance=token, tenant=tenant)
    token.refresh_from_db()
    return token


ROTATION_OVERLAPS = (timedelta(hours=1), timedelta(days=1), timedelta(days=7))


def api_token_rotate(*, actor: Actor, token: ApiToken, overlap: timedelta) -> IssuedToken:
    """A new token with the old one's name, scopes and expiry, and the old one ending by
    itself after `overlap` (sooner, if it expired sooner anyway): time for every client
    to take the new secret, with no moment when neither works. Audited on both."""
    if overlap < timedelta(0) or overlap > max(ROTATION_OVERLAPS):
        raise ValidationFailed(
            "The overlap is between none and seven days.",
            code=TenancyCode.INVALID_OVERLAP,
            field="overlap",
        )
    tenant = token.service_account.tenant
    with owner_scope(tenant):
        # The row lock makes rotations of one token take turns; the one that waited
        # then finds the token rotated and is refused, so one token has one successor.
        old = ApiToken.objects.select_for_update().filter(pk=token.pk).first()
        now = timezone.now()
        if old is None or old.revoked_at is not None or (old.expires_at and old.expires_at <= now):
            raise Conflict("Only a live token can be rotated.", code=TenancyCode.TOKEN_NOT_LIVE)
        if old.rotated_at is not None:
            raise Conflict(
                "This token was rotated already; rotate the token that replaced it.",
                code=TenancyCode.TOKEN_ALREADY_ROTATED,
            )
        issued = api_token_issue(
            actor=actor,
            service_account=old.service_account,
            name=old.name,
            scopes=old.scopes,
            expires_at=old.expires_at,
        )
        ends = now + overlap
        old.rotated_at = now
        if old.expires_at is None or ends < old.expires_at:
            old.expires_at = ends
        old.save(update_fields=["expires_at", "rotated_at"])
        audit_record(
            actor=actor,
            action="api_token.rotate",
            instance=old,
            tenant=tenant,
            changes={
                "expires_at": [None, old.expires_at.isoformat()],
                "by": [None, issued.token.prefix],
            },
        )
    return issued


class AuthenticationError(DomainError):
    status = 401
    title = "Authentication failed"


def api_token_authenticate(*, secret: str) -> ApiToken:
    """The live token for a presented bearer secret, or AuthenticationError with its code.

    Served from apps.tenancy.auth_cache when it holds the token under the current
    generation (every revocation, rotation and account or tenant change moves it on);
    the checks below run on every request either way."""
    if not secret.startswith(TOKEN_PREFIX):
        raise AuthenticationError("The token is not valid.", code=TenancyCode.TOKEN_INVALID)
    digest = token_digest(secret)
    token, generation = auth_cache.lookup(digest)
    if token is None:
        with system_scope():
            token = (
                ApiToken.objects.select_related("service_account", "service_account__tenant")
                .filter(digest=digest)
                .first()
            )
        if token is None:
            raise AuthenticationError("The token is not valid.", code=TenancyCode.TOKEN_INVALID)
        auth_cache.store(token, generation)
    now = timezone.now()
    if token.revoked_at is not None:
        raise AuthenticationError("The token has been revoked.", code=TenancyCode.TOKEN_REVOKED)
    if token.expires_at is not None and token.expires_at <= now:
        raise AuthenticationError("The token has expired.", code=TenancyCode.TOKEN_EXPIRED)
    if not token.service_account.is_active:
        raise AuthenticationError(
            "The service account is disabled.", code=TenancyCode.ACCOUNT_DISABLED
        )
    # Recording use at most once a minute keeps a busy token from writing on every call;
    # the cached entry learns the new time, so other processes skip the write too.
    if token.last_used_at is None or token.last_used_at < now - timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(minutes=1))
        ).update(last_used_at=now)
        token.last_used_at = now
        auth_cache.store(token, generation)
    return token
