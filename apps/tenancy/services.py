"""Writes of the tenancy app: tenants, memberships, service accounts, tokens, logins."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import F, ProtectedError, Q
from django.utils import timezone
from guardian.shortcuts import assign_perm, remove_perm

from apps.core.addresses import client_address
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError, NotFound, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.tenancy import attempts, auth_cache, totp
from apps.tenancy.audit import audit_record, diff, snapshot
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import (
    TOKEN_SCOPES,
    ApiToken,
    Membership,
    RecoveryCode,
    Region,
    ServiceAccount,
    Tenant,
    TotpDevice,
    User,
)
from apps.tenancy.selectors import has_second_factor

TENANT_FIELDS = ["slug", "name", "environment_class", "home_region", "status"]
TOKEN_PREFIX = "stw_"


# --------------------------------------------------------------------------- tenants


def tenant_create(
    *,
    actor: Actor,
    slug: str,
    name: str,
    home_region: Region,
    environment_class: str = Tenant.EnvironmentClass.NON_PRODUCTION,
) -> Tenant:
    tenant = Tenant(
        slug=slug, name=name, home_region=home_region, environment_class=environment_class
    )
    tenant.full_clean()
    with transaction.atomic():
        tenant.save()
        audit_record(
            actor=actor,
            action="tenant.create",
            instance=tenant,
            tenant=tenant,
            changes=diff({}, snapshot(tenant, TENANT_FIELDS)),
        )
        _emit_tenant_event(tenant, "tenant.created", snapshot(tenant, TENANT_FIELDS))
    return tenant


def _emit_tenant_event(tenant: Tenant, event_type: str, payload: dict) -> None:
    with tenant_scope(tenant):
        emit(
            topic="tenancy.tenant",
            event_type=event_type,
            aggregate_type="tenant",
            aggregate_id=str(tenant.pk),
            payload={"id": str(tenant.pk), **payload},
            tenant=tenant,
        )


def tenant_set_lifecycle_status(*, tenant_id, status: str) -> None:
    """Offboarding, then Deleted: set by a governance deletion order in its own
    transaction. No audit row or event of its own: the order's hash-chained evidence
    and its events are the record, and the tenant's audit trail is being redacted."""
    if status not in {Tenant.Status.OFFBOARDING, Tenant.Status.DELETED}:
        raise ValidationFailed(f"A deletion order does not set a tenant {status}.")
    tenant = Tenant.objects.get(pk=tenant_id)
    if tenant.status != status:  # a phase run again finds it set
        Tenant.TRANSITIONS.move(tenant, status, updated_at=timezone.now())
    auth_cache.invalidate()  # its services' cached tokens carry the tenant's status


def tenant_update(*, actor: Actor, tenant: Tenant, **fields) -> Tenant:
    unknown = set(fields) - set(TENANT_FIELDS)
    if unknown:
        raise ValidationFailed(f"unknown tenant fields: {', '.join(sorted(unknown))}")
    before = snapshot(tenant, TENANT_FIELDS)
    for name, value in fields.items():
        setattr(tenant, name, value)
    tenant.full_clean()
    changes = diff(before, snapshot(tenant, TENANT_FIELDS))
    if not changes:
        return tenant
    with transaction.atomic():
        if "status" in changes:
            Tenant.TRANSITIONS.move(tenant, tenant.status, updated_at=timezone.now())
        tenant.save()
        audit_record(
            actor=actor, action="tenant.update", instance=tenant, tenant=tenant, changes=changes
        )
        _emit_tenant_event(
            tenant, "tenant.updated", {**snapshot(tenant, TENANT_FIELDS), "changes": changes}
        )
    return tenant


# --------------------------------------------------------------------------- memberships

# Object permissions a role carries on its tenant (django-guardian, direct FK tables).
ROLE_PERMISSIONS = {
    Membership.Role.ADMIN: ["tenancy.view_tenant", "tenancy.administer_tenant"],
    Membership.Role.MEMBER: ["tenancy.view_tenant"],
}


def membership_set(*, actor: Actor, tenant: Tenant, user: User, role: str) -> Membership:
    """Give `user` the `role` in `tenant`, creating or changing the membership."""
    if role not in Membership.Role.values:
        raise ValidationFailed(f"unknown role {role!r}", code=TenancyCode.UNKNOWN_ROLE)
    with tenant_scope(tenant):
        membership = Membership.objects.select_for_update().filter(tenant=tenant, user=user).first()
        before = {"role": membership.role} if membership else {}
        if membership is None:
            membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        elif membership.role != role or membership.pending:
            membership.role = role
            membership.pending = False
            membership.save(update_fields=["role", "pending"])
        else:
            return membership
        for perm in ROLE_PERMISSIONS[Membership.Role.ADMIN]:
            remove_perm(perm, user, tenant)
        for perm in ROLE_PERMISSIONS[role]:
            assign_perm(perm, user, tenant)
        audit_record(
            actor=actor,
            action="membership.set",
            instance=membership,
            tenant=tenant,
            changes=diff(before, {"role": role, "user": user.get_username()}),
        )
    return membership


def membership_invite(
    *, actor: Actor, tenant: Tenant, username: str, role: str, by_operator: bool = False
) -> None:
    """Invite the person named `username` into `tenant` with `role`; they join only by
    accepting (membership_accept). Returns nothing on purpose: whether the username
    exists, is an operator, or already belongs must not show in the answer, nor in the
    tenant's audit trail, which records the invitation alike in every case.

    A person already in the tenant gets the role at once (they chose the tenant when
    they joined). An operator is invited only by an operator: a tenant admin's
    invitation of one is recorded and does nothing."""
    if role not in Membership.Role.values:
        raise ValidationFailed(
            f"unknown role {role!r}", code=TenancyCode.UNKNOWN_ROLE, field="role"
        )
    user = User.objects.filter(username=username, is_active=True).first()
    with tenant_scope(tenant):
        audit_record(
            actor=actor,
            action="membership.invite",
            instance=tenant,
            tenant=tenant,
            changes={"user": [None, username], "role": [None, role]},
        )
        if user is None or (user.is_operator and not by_operator):
            return
        membership = Membership.objects.select_for_update().filter(tenant=tenant, user=user).first()
        if membership is None:
            Membership.objects.create(tenant=tenant, user=user, role=role, pending=True)
        elif membership.pending:
            if membership.role != role:
                membership.role = role
                membership.save(update_fields=["role"])
        else:
            membership_set(actor=actor, tenant=tenant, user=user, role=role)


def _own_invitation(actor: Actor, membership: Membership) -> None:
    if actor.user is None or actor.user.pk != membership.user_id or not membership.pending:
        raise NotFound("No such invitation.", code=TenancyCode.INVITATION_NOT_FOUND)


def membership_accept(*, actor: Actor, membership: Membership) -> Membership:
    """The invited person's own act: the invitation becomes a membership. The tenant
    they act for does not change; they switch to it when they choose to."""
    _own_invitation(actor, membership)
    tenant = membership.tenant
    with tenant_scope(tenant):
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        _own_invitation(actor, membership)
        membership.pending = False
        membership.save(update_fields=["pending"])
        for perm in ROLE_PERMISSIONS[membership.role]:
            assign_perm(perm, membership.user, tenant)
        audit_record(
            actor=actor,
            action="membership.accept",
            instance=membership,
            tenant=tenant,
            changes={"role": [None, membership.role], "user": [None, actor.user.get_username()]},
        )
    return membership


def membership_decline(*, actor: Actor, membership: Membership) -> None:
    """The invited person's own act. Recorded in the platform's trail about the tenant
    (operators see it; a tenant deletion redacts it), not in the tenant's: a decline
    there would tell its admins that the username they typed is a person."""
    _own_invitation(actor, membership)
    tenant = membership.tenant
    with transaction.atomic():
        with tenant_scope(tenant):
            membership = Membership.objects.select_for_update().get(pk=membership.pk)
            _own_invitation(actor, membership)
            membership.delete()
        audit_record(
            actor=actor,
            action="membership.decline",
            instance=tenant,
            changes={"role": [membership.role, None], "user": [actor.user.get_username(), None]},
        )


def membership_invitation_withdraw(*, actor: Actor, tenant: Tenant, username: str) -> None:
    """Withdraw the tenant's invitation of `username`. Like the invitation, it returns
    nothing and is recorded alike whether a pending invitation was there, the username
    exists, or the person had accepted already (then it changes nothing)."""
    user = User.objects.filter(username=username).first()
    with tenant_scope(tenant):
        audit_record(
            actor=actor,
            action="membership.withdraw",
            instance=tenant,
            tenant=tenant,
            changes={"user": [username, None]},
        )
        if user is not None:
            Membership.objects.filter(tenant=tenant, user=user, pending=True).delete()


def membership_remove(*, actor: Actor, membership: Membership) -> None:
    tenant, user = membership.tenant, membership.user
    with tenant_scope(tenant):
        for perm in ROLE_PERMISSIONS[Membership.Role.ADMIN]:
            remove_perm(perm, user, tenant)
        audit_record(
            actor=actor,
            action="membership.remove",
            instance=membership,
            tenant=tenant,
            changes={"role": [membership.role, None], "user": [user.get_username(), None]},
        )
        membership.delete()


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


# --------------------------------------------------------------------------- console login


class LoginRefused(DomainError):
    status = 401
    title = "Login refused"


class TooManyAttempts(DomainError):
    """Too many failures, from the client's address or at the name or person tried;
    `retry_after` is the seconds until the oldest of them leaves the window."""

    status = 429
    title = "Too many failed attempts"

    def __init__(self, detail: str, *, code: str, retry_after: float):
        super().__init__(detail, code=code)
        self.retry_after = max(math.ceil(retry_after), 1)


def _minutes(seconds: float) -> str:
    minutes = max(math.ceil(seconds / 60), 1)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _address_throttled(wait: float) -> TooManyAttempts:
    return TooManyAttempts(
        f"Too many failed sign-ins from your address; try again in {_minutes(wait)}.",
        code=TenancyCode.LOGIN_THROTTLED,
        retry_after=wait,
    )


def _name_locked(wait: float) -> TooManyAttempts:
    # The same words whether or not anyone has the name: the limit counts names as typed.
    return TooManyAttempts(
        f"Too many failed sign-ins for this account; try again in {_minutes(wait)}, or "
        "sign in with your password and authenticator code.",
        code=TenancyCode.ACCOUNT_LOCKED,
        retry_after=wait,
    )


def login_attempt(*, request, username: str, password: str) -> User:
    """Check the password step of a console sign-in (apps.tenancy.attempts).

    An address that failed too often is refused before anything else, by Redis alone:
    no query, no password hash. Otherwise the password is hashed whether or not the
    name exists and whether or not it is locked, so neither the answer nor its time
    tells a known name from an unknown one. A locked name is refused the password
    alone; with the right password, someone who has an authenticator goes on to the
    code step, which decides: nobody can lock a person with a second factor out.
    """
    address = client_address(request)
    # Counted as failed from the start, and taken back on success: a burst of parallel
    # guesses cannot all pass the check before the first of them is counted.
    wait, reservation = attempts.reserve(attempts.ADDRESS, address)
    if wait:
        attempts.note("password", "throttled", address=address)
        raise _address_throttled(wait)
    name = attempts.username_ident(username)
    locked = attempts.blocked_for(attempts.PASSWORD, name)
    # Django's authenticate, through PersonBackend: the connection is released before
    # the hash, so guessing does not hold the pool.
    user = authenticate(request, username=username, password=password)
    if user is None:
        now_locked = attempts.record_failure(attempts.PASSWORD, name)
        attempts.note("password", "failure", address=address, username=username)
        if now_locked and not locked:
            _audit_lock(User.objects.filter(username=username).first(), now_locked)
        if now_locked:
            raise _name_locked(now_locked)
        raise LoginRefused("Wrong username or password.", code=TenancyCode.INVALID_CREDENTIALS)
    attempts.release(attempts.ADDRESS, address, reservation)
    second_factor = has_second_factor(user)
    if locked and not second_factor:
        attempts.note("password", "locked", address=address, username=username)
        raise _name_locked(locked)
    if not second_factor:
        # With two factors only the code step clears the name's count: a password alone
        # that was guessed must not unlock it.
        attempts.clear(attempts.PASSWORD, name)
    attempts.note("password", "success", address=address, username=username)
    return user


def person_choose_tenant(*, user: User, tenant_id: str) -> None:
    """Remember the tenant `user` chose to act for: their next sign-in starts there
    (apps.tenancy.middleware.pin_session_tenant). A preference, not audited."""
    User.objects.filter(pk=user.pk).exclude(last_chosen_tenant=tenant_id).update(
        last_chosen_tenant=tenant_id
    )
    auth_cache.person_invalidate(user.pk)


def _audit_lock(user: User | None, wait: float) -> None:
    if user is None:
        return  # nobody's account: the lock is the name's alone
    until = timezone.now() + timedelta(seconds=wait)
    audit_record(
        actor=None,
        action="user.lock",
        instance=user,
        changes={"locked_until": [None, until.isoformat()]},
    )


def user_create(
    *,
    actor: Actor,
    username: str,
    password: str,
    email: str = "",
    is_operator: bool = False,
    is_superuser: bool = False,
) -> User:
    if User.objects.filter(username=username).exists():
        raise Conflict(f"user {username!r} exists", code=TenancyCode.USER_EXISTS)
    user = User(username=username, email=email, is_staff=is_operator, is_superuser=is_superuser)
    try:
        validate_password(password, user)
    except DjangoValidationError as exc:
        raise ValidationFailed(" ".join(exc.messages), code=TenancyCode.WEAK_PASSWORD) from None
    with transaction.atomic():
        user.set_password(password)
        user.save()
        audit_record(
            actor=actor,
            action="user.create",
            instance=user,
            changes={"username": [None, username], "is_operator": [None, is_operator]},
        )
    return user


# --------------------------------------------------------------------------- platform catalog


def catalog_create(*, actor: Actor, model: type[models.Model], **fields):
    """Create a platform-wide catalog row (a region, a store, a profile…) from `fields`,
    validated with full_clean() and audited. Catalog tables hold no tenant's rows."""
    return _catalog_write(actor=actor, instance=model(), fields=fields, creating=True)


def catalog_update(*, actor: Actor, instance: models.Model, **changes):
    """Change a catalog row's fields, validated with full_clean(); the audit row holds
    each changed field's value before and after."""
    return _catalog_write(actor=actor, instance=instance, fields=changes, creating=False)


def _catalog_write(*, actor: Actor, instance: models.Model, fields: dict, creating: bool):
    names = list(fields)
    before = {} if creating else snapshot(instance, names)
    for name, value in fields.items():
        setattr(instance, name, value)
    try:
        instance.full_clean()
    except DjangoValidationError as exc:
        raise ValidationFailed(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()),
            code=CoreCode.INVALID,
        ) from None
    with system_scope():
        instance.save()
        audit_record(
            actor=actor,
            action=f"{instance._meta.model_name}.{'create' if creating else 'update'}",
            instance=instance,
            changes=diff(before, snapshot(instance, names)),
        )
    return instance


def catalog_delete(*, actor: Actor, instance) -> None:
    """Delete a catalog row nothing uses any more (PROTECT refuses otherwise: 409)."""
    with system_scope():
        audit_record(
            actor=actor,
            action=f"{instance._meta.model_name}.delete",
            instance=instance,
            changes={"deleted": [str(instance), None]},
        )
        try:
            with transaction.atomic():
                instance.delete()
        except ProtectedError:
            raise Conflict(
                f"{instance} is still in use and cannot be deleted.", code=TenancyCode.IN_USE
            ) from None


# --------------------------------------------------------------------------- two-factor sign-in

RECOVERY_CODE_COUNT = 10


def totp_enrol_begin(*, actor: Actor, user: User) -> totp.Enrolment:
    """Give `user` a new, unconfirmed authenticator seed (replacing an unconfirmed one)."""
    seed = totp.new_seed()
    with transaction.atomic():
        device = TotpDevice.objects.select_for_update().filter(user=user).first()
        if device is not None and device.confirmed_at is not None:
            raise Conflict(
                "Two-factor sign-in is already on; turn it off or have it reset first.",
                code=TenancyCode.TOTP_ALREADY_ENABLED,
            )
        device = device or TotpDevice(user=user)
        device.sealed_seed = totp.seal(seed)
        device.last_used_step = None
        device.created_at = timezone.now()
        device.save()
        audit_record(actor=actor, action="user.totp_enrol_start", instance=user)
    return totp.enrolment(seed, account=user.username)


def totp_enrol_confirm(*, actor: Actor, user: User, code: str) -> list[str]:
    """Switch two-factor sign-in on once `code` proves the app has the seed; returns the
    recovery codes, which are shown once and kept only as digests.

    Every session the person has open ends: they were opened with the password alone,
    perhaps by whoever else knows it. `user` comes back with its new session hash, for
    the caller to keep its own session (django.contrib.auth.update_session_auth_hash).
    """
    now = timezone.now()
    with transaction.atomic():
        device = TotpDevice.objects.select_for_update().filter(user=user).first()
        if device is None or device.confirmed_at is not None:
            raise Conflict(
                "There is no enrolment waiting for a code.", code=TenancyCode.TOTP_NOT_PENDING
            )
        step = totp.matching_step(
            _seed_of(device), code, now.timestamp(), after=device.last_used_step
        )
        if step is None:
            raise ValidationFailed(
                "That is not the authenticator's current code; check the phone's clock "
                "and try again.",
                code=TenancyCode.INVALID_CODE,
            )
        device.confirmed_at = now
        device.last_used_step = step
        device.save(update_fields=["confirmed_at", "last_used_step"])
        codes = _recovery_codes_issue(user)
        _sessions_end(user)
        audit_record(
            actor=actor,
            action="user.totp_enable",
            instance=user,
            changes={"two_factor": [False, True], "recovery_codes": [None, len(codes)]},
        )
    return codes


def login_second_factor(*, user_id: int, code: str) -> tuple[User, str]:
    """Check the code step of a two-step login: an authenticator code, or a recovery code.

    Returns the user and how they proved it (`totp` or `recovery_code`). Wrong and
    replayed codes count towards the person's code limit (apps.tenancy.attempts), the
    one the two-factor pages share; a right code clears it, and lifts the lock that
    wrong passwords put on the person's name.
    """
    now = timezone.now()
    with _lock_audited(), transaction.atomic():
        user = User.objects.select_for_update().filter(pk=user_id, is_active=True).first()
        if user is None:
            raise LoginRefused("Sign in again.", code=TenancyCode.LOGIN_EXPIRED)
        method = _code_attempt(user, code, now, refusal=LoginRefused)
    attempts.clear(attempts.PASSWORD, attempts.username_ident(user.username))
    return user, method


def _code_attempt(user: User, code: str, now: datetime, *, refusal=None, recovery=True) -> str:
    """How `code` proves `user`'s second factor (`totp` or `recovery_code`), under the
    person's code limit: refused unheard once it is reached, a failure counted, a
    success clearing it. Called under the user's row lock. `refusal` is the error a
    wrong code raises (ValidationFailed unless given)."""
    ident = str(user.pk)
    wait = attempts.blocked_for(attempts.CODE, ident)
    if wait:
        attempts.note("code", "throttled", username=user.username)
        raise TooManyAttempts(
            f"Too many wrong codes; try again in {_minutes(wait)}.",
            code=TenancyCode.ACCOUNT_LOCKED,
            retry_after=wait,
        )
    method, problem = _second_factor_check(user, code, now, recovery=recovery)
    if method is None:
        locked = attempts.record_failure(attempts.CODE, ident)
        attempts.note("code", "failure", username=user.username)
        detail = (
            "That code was used already; wait for the next one."
            if problem == TenancyCode.CODE_REUSED
            else "Wrong code."
        )
        refused = (refusal or ValidationFailed)(detail, code=problem)
        refused.lock_began = (user, locked) if locked else None
        raise refused
    attempts.clear(attempts.CODE, ident)
    attempts.note("code", "success", username=user.username)
    return method


@contextlib.contextmanager
def _lock_audited():
    """Around a transaction that checks a code: a wrong code that reached the limit is
    audited (`user.lock`) once the refusing transaction has rolled back."""
    try:
        yield
    except DomainError as exc:
        began = getattr(exc, "lock_began", None)
        if began:
            _audit_lock(*began)
        raise


def totp_disable(*, actor: Actor, user: User, code: str) -> None:
    """Switch two-factor sign-in off, proven with a current or recovery code. Operators
    may not: the console requires it of them."""
    if user.is_operator:
        raise Conflict("Operators must keep two-factor sign-in on.", code=TenancyCode.TOTP_REQUIRED)
    with _lock_audited(), transaction.atomic():
        User.objects.select_for_update().filter(pk=user.pk).first()
        if not has_second_factor(user):
            raise Conflict("Two-factor sign-in is not on.", code=TenancyCode.TOTP_NOT_ENABLED)
        _code_attempt(user, code, timezone.now())
        _second_factor_remove(user)
        audit_record(
            actor=actor,
            action="user.totp_disable",
            instance=user,
            changes={"two_factor": [True, False]},
        )


def totp_reset(*, actor: Actor, user: User) -> None:
    """Remove `user`'s authenticator and recovery codes, for someone who lost the device,
    and end their open sessions. An operator then enrols again at their next sign-in."""
    with transaction.atomic():
        device = TotpDevice.objects.select_for_update().filter(user=user).first()
        if device is None:
            raise NotFound(
                f"{user.username} has no authenticator.", code=TenancyCode.TOTP_NOT_ENABLED
            )
        _second_factor_remove(user)
        # The device may be in someone else's hands, and so may a session it opened.
        _sessions_end(user)
        audit_record(
            actor=actor,
            action="user.totp_reset",
            instance=user,
            changes={"two_factor": [device.confirmed_at is not None, False]},
        )


def _sessions_end(user: User) -> None:
    """End every open session of `user`: the generation in its session hash moves on
    (apps.tenancy.models.User). `user` is given the new hash."""
    User.objects.filter(pk=user.pk).update(session_generation=F("session_generation") + 1)
    user.refresh_from_db(fields=["session_generation"])
    user.cached_session_auth_hash = None  # computed again, from the new generation
    auth_cache.person_invalidate(user.pk)  # its cached account has the old session hash


def recovery_codes_regenerate(*, actor: Actor, user: User, code: str) -> list[str]:
    """New recovery codes for a current authenticator code; the old ones stop working."""
    with _lock_audited(), transaction.atomic():
        User.objects.select_for_update().filter(pk=user.pk).first()
        if not has_second_factor(user):
            raise Conflict("Two-factor sign-in is not on.", code=TenancyCode.TOTP_NOT_ENABLED)
        _code_attempt(user, code, timezone.now(), recovery=False)
        codes = _recovery_codes_issue(user)
        audit_record(
            actor=actor,
            action="user.recovery_codes_regenerate",
            instance=user,
            changes={"recovery_codes": [None, len(codes)]},
        )
    return codes


def _seed_of(device: TotpDevice) -> bytes:
    try:
        return totp.unseal(device.sealed_seed)
    except totp.SeedUnreadable:
        raise Conflict(
            "The authenticator was sealed under a secret key Steward no longer has; "
            "an operator must reset it.",
            code=TenancyCode.TOTP_UNREADABLE,
        ) from None


def _second_factor_check(
    user: User, code: str, now: datetime, *, recovery: bool = True
) -> tuple[str | None, str]:
    """(`totp` | `recovery_code`, "") when `code` passes, else (None, problem code).

    Called under the user's row lock, so two requests cannot both use one code.
    """
    device = TotpDevice.objects.filter(user=user, confirmed_at__isnull=False).first()
    if device is None:
        return None, TenancyCode.TOTP_NOT_ENABLED
    seed = _seed_of(device)
    step = totp.matching_step(seed, code, now.timestamp(), after=None)
    if step is not None:
        if device.last_used_step is not None and step <= device.last_used_step:
            return None, TenancyCode.CODE_REUSED
        device.last_used_step = step
        device.save(update_fields=["last_used_step"])
        return "totp", ""
    if recovery:
        used = RecoveryCode.objects.filter(
            user=user, digest=_recovery_digest(code), used_at__isnull=True
        ).update(used_at=now)
        if used:
            audit_record(
                actor=Actor(user=user),
                action="user.recovery_code_use",
                instance=user,
                changes={
                    "recovery_codes_left": [
                        None,
                        RecoveryCode.objects.filter(user=user, used_at__isnull=True).count(),
                    ]
                },
            )
            return "recovery_code", ""
    return None, TenancyCode.INVALID_CODE


def _recovery_digest(code: str) -> str:
    return hashlib.sha256(totp.normalize_code(code).encode()).hexdigest()


def _recovery_codes_issue(user: User) -> list[str]:
    RecoveryCode.objects.filter(user=user).delete()
    # 80 random bits each, in four groups people can read out and type.
    codes = []
    for _ in range(RECOVERY_CODE_COUNT):
        raw = base64.b32encode(secrets.token_bytes(10)).decode()
        codes.append("-".join(raw[i : i + 4] for i in range(0, 16, 4)))
    RecoveryCode.objects.bulk_create(
        RecoveryCode(user=user, digest=_recovery_digest(c)) for c in codes
    )
    return codes


def _second_factor_remove(user: User) -> None:
    TotpDevice.objects.filter(user=user).delete()
    RecoveryCode.objects.filter(user=user).delete()
