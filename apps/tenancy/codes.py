"""The codes tenancy refuses with: tenants' status, tokens, sign-in, people and roles."""

from __future__ import annotations

from apps.core.codes import Codes


class TenancyCode(Codes):
    # A tenant that is not active.
    TENANT_DELETED = "tenant_deleted", "The tenant is deleted: its people and services cannot act."
    TENANT_SUSPENDED = "tenant_suspended", "The tenant is suspended: it can read but not write."
    TENANT_OFFBOARDING = (
        "tenant_offboarding",
        "The tenant is being offboarded: it can read but not write.",
    )
    # Service tokens.
    TOKEN_INVALID = "token_invalid", "The bearer token is not one Steward issued to this caller."
    TOKEN_REVOKED = "token_revoked", "The token has been revoked."
    TOKEN_EXPIRED = "token_expired", "The token has expired."
    TOKEN_NOT_LIVE = (
        "token_not_live",
        "Only a live token (not revoked, not expired) can be rotated.",
    )
    NAME_UNAVAILABLE = (
        "name_unavailable",
        "The service account name is taken (in any tenant, which the answer does not say).",
    )
    TOKEN_ALREADY_ROTATED = (
        "token_already_rotated",
        "The token was rotated already; rotate its successor instead.",
    )
    ACCOUNT_DISABLED = "account_disabled", "The token's service account is disabled."
    UNKNOWN_SCOPE = "unknown_scope", "A scope named for the token does not exist."
    INVALID_OVERLAP = "invalid_overlap", "A rotation's overlap is between none and seven days."
    # Signing in.
    INVALID_CREDENTIALS = "invalid_credentials", "Wrong username or password."
    ACCOUNT_LOCKED = (
        "account_locked",
        "Too many failed sign-ins or codes for the account; the password alone waits a while.",
    )
    LOGIN_THROTTLED = (
        "login_throttled",
        "Too many failed sign-ins from the client's address; retry after Retry-After.",
    )
    LOGIN_EXPIRED = "login_expired", "The sign-in waited too long for its code; sign in again."
    # Two-factor sign-in.
    TOTP_ALREADY_ENABLED = "totp_already_enabled", "Two-factor sign-in is on already."
    TOTP_NOT_PENDING = "totp_not_pending", "No authenticator enrolment waits for a code."
    TOTP_NOT_ENABLED = "totp_not_enabled", "Two-factor sign-in is not on for this person."
    TOTP_REQUIRED = "totp_required", "Operators must keep two-factor sign-in on."
    TOTP_UNREADABLE = (
        "totp_unreadable",
        "The authenticator was sealed under a key Steward no longer has; an operator resets it.",
    )
    INVALID_CODE = (
        "invalid_code",
        "The code is neither the authenticator's current one nor a recovery code.",
    )
    CODE_REUSED = "code_reused", "The authenticator's code was used already; wait for the next."
    # People, roles and catalog rows.
    USER_EXISTS = "user_exists", "A person with that username exists."
    WEAK_PASSWORD = "weak_password", "The password does not meet the password rules."
    UNKNOWN_ROLE = "unknown_role", "The role is not one of the roles a membership may have."
    INVITATION_NOT_FOUND = "invitation_not_found", "No such invitation waits for this person."
    IN_USE = "in_use", "The region or data class is still in use and cannot be deleted."
