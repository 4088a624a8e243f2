"""A person's sign-in: passwords, the limits on guessing, two-factor codes."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.core.addresses import client_address
from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError, NotFound, ValidationFailed
from apps.tenancy import attempts, auth_cache, totp
from apps.tenancy.audit import audit_record
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import (
    RecoveryCode,
    TotpDevice,
    User,
)
from apps.tenancy.selectors import has_second_factor

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
