from __future__ import annotations

import uuid

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.crypto import salted_hmac
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from apps.core.search import name_indexes
from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk

# Apps a service token can be scoped to; `<app>:write` implies `<app>:read`.
TOKEN_SCOPE_APPS = (
    "tenancy",
    "eventing",
    "assets",
    "registry",
    "stores",
    "governance",
    "compute",
    "attention",
)
# `registry:admin` lets a service account manage the Schema Registry API's settings
# (compatibility levels, modes, data-contract defaults) as schema tooling does with the
# reference registry's role-based access; an operator grants it, like any scope, on a
# token (audited). It implies `registry:write`.
TOKEN_SCOPES = (
    *(f"{app}:{level}" for app in TOKEN_SCOPE_APPS for level in ("read", "write")),
    "registry:admin",
)
# What a scope's level implies of the same app's other levels.
IMPLIED_LEVELS = {"write": ("read",), "admin": ("read", "write")}


class Region(models.Model):
    """Where a tenant's data may live (`israelcentral`, `westeurope`, …)."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    jurisdiction = models.CharField(
        max_length=64, blank=True, help_text="Legal area the region belongs to, e.g. EU, IL, US."
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class DataClass(models.Model):
    """A class of data with residency consequences (`personal`, `telemetry`, …)."""

    class Sensitivity(models.TextChoices):
        PUBLIC = "public", "Public"
        INTERNAL = "internal", "Internal"
        CONFIDENTIAL = "confidential", "Confidential"
        RESTRICTED = "restricted", "Restricted"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    sensitivity = models.CharField(
        max_length=16, choices=Sensitivity.choices, default=Sensitivity.INTERNAL
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "data classes"

    def __str__(self) -> str:
        return self.slug


class Tenant(models.Model):
    class EnvironmentClass(models.TextChoices):
        PRODUCTION = "production", "Production"
        NON_PRODUCTION = "non_production", "Non-production"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUSPENDED = "suspended", "Suspended"
        OFFBOARDING = "offboarding", "Offboarding"
        DELETED = "deleted", "Deleted"

    # An operator suspends and resumes a tenant; a deletion order takes it offboarding,
    # then deleted, and nothing brings it back from either.
    TRANSITIONS = Transitions(
        initial=[Status.ACTIVE],
        moves={
            Status.ACTIVE: {Status.SUSPENDED, Status.OFFBOARDING, Status.DELETED},
            Status.SUSPENDED: {Status.ACTIVE, Status.OFFBOARDING, Status.DELETED},
            Status.OFFBOARDING: {Status.DELETED},
            Status.DELETED: set(),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    environment_class = models.CharField(
        max_length=16, choices=EnvironmentClass.choices, default=EnvironmentClass.NON_PRODUCTION
    )
    home_region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="tenants")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    # A tenant belongs to itself (apps.core.scope.owning_tenant_id).
    IS_TENANT = True

    class Meta:
        ordering = ["slug"]
        permissions = [("administer_tenant", "Administer the tenant's members and settings")]
        # The console's search finds a tenant by its slug (apps.core.search.named).
        indexes = name_indexes("slug", prefix="tenant_slug")

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        return reverse_pk("console:tenant-detail", self.pk)


class User(AbstractUser):
    """A person. Staff users are operators; everyone else acts through memberships."""

    # Raised to end every open session of the person at once (an authenticator reset).
    session_generation = models.PositiveIntegerField(default=0)
    # The tenant the person last chose to act for; a new sign-in starts there while they
    # are still its member. An id, not a key: it is a preference, and neither the tenant
    # nor the membership has to outlive it.
    last_chosen_tenant = models.UUIDField(null=True, blank=True)

    @property
    def is_operator(self) -> bool:
        return self.is_active and self.is_staff

    # The session hash under the current secret, as the auth cache computed it when it
    # kept this account without its password (apps.tenancy.auth_cache.person_lookup).
    cached_session_auth_hash: str | None = None

    def _get_session_auth_hash(self, secret=None):
        # Django signs each session with this hash and ends a session whose hash no longer
        # matches, which is how a password change signs a person out everywhere. Mixing in
        # the generation does the same without touching the password. Generation 0 (never
        # reset) is Django's own hash.
        # (Django computes both its current and SECRET_KEY_FALLBACKS hashes here.)
        if secret is None and self.cached_session_auth_hash and "password" not in self.__dict__:
            # Still the cached account's hash: its password was neither read nor set since.
            return self.cached_session_auth_hash
        stock = super()._get_session_auth_hash(secret=secret)
        if not self.session_generation:
            return stock
        return salted_hmac(
            "apps.tenancy.User.session_generation",
            f"{stock}:{self.session_generation}",
            secret=secret,
            algorithm="sha256",
        ).hexdigest()


class TotpDevice(models.Model):
    """A person's authenticator (RFC 6238). Unconfirmed until they type a first code.

    The seed is stored sealed (apps.tenancy.totp.seal), never in clear.
    """

    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="totp_device")
    sealed_seed = models.TextField()
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # The time step of the last code accepted: no code of that step or before is taken
    # again, so a code seen over someone's shoulder cannot be replayed.
    last_used_step = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return f"authenticator of {self.user}"


class RecoveryCode(models.Model):
    """A single-use code for signing in without the authenticator. Only its digest is kept."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="recovery_codes")
    digest = models.CharField(max_length=64, unique=True)
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    def __str__(self) -> str:
        return f"recovery code of {self.user}"


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", "Tenant admin"
        MEMBER = "member", "Member"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    # An invitation the person has not accepted yet: it grants nothing, and only the
    # person it names sees it (apps.tenancy.services.membership_invite).
    pending = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["tenant__slug", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="membership_unique_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant} ({self.role})"


class ServiceAccount(models.Model):
    """A platform service calling the API. Bound to one tenant, or platform-wide (no tenant),
    in which case it reads across tenants and writes through services in the owner's scope."""

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="service_accounts"
    )
    name = models.SlugField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]
        indexes = name_indexes("name", prefix="serviceaccount_name")

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse_pk("console:service-account-detail", self.pk)


class ApiToken(models.Model):
    """A bearer token of a service account. Only its SHA-256 digest is stored."""

    service_account = models.ForeignKey(
        ServiceAccount, on_delete=models.CASCADE, related_name="tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, help_text="Shown to tell tokens apart.")
    digest = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Set when a rotation replaced the token: a token is rotated once, so concurrent
    # rotations cannot each mint a live successor (apps.tenancy.services.api_token_rotate).
    rotated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=list(TOKEN_SCOPES)), name="apitoken_known_scopes"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.service_account})"

    def allows(self, scope: str) -> bool:
        app, _, level = scope.partition(":")
        return scope in self.scopes or any(
            f"{app}:{higher}" in self.scopes
            for higher, lower in IMPLIED_LEVELS.items()
            if level in lower
        )


class AuditEvent(models.Model):
    """Append-only record of every change; the database refuses UPDATE and DELETE."""

    occurred_at = models.DateTimeField(default=timezone.now, db_index=True)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_user = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_service = models.ForeignKey(
        ServiceAccount, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="Who acted, as named at the time.")
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200, blank=True)
    changes = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    # Set when a tenant deletion redacted the entry's personal data; the entry stays.
    redacted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id} by {self.actor_label}"


class TenantUserObjectPermission(UserObjectPermissionBase):
    """Direct-foreign-key object permissions on tenants (django-guardian)."""

    content_object = models.ForeignKey(Tenant, on_delete=models.CASCADE)


class TenantGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Tenant, on_delete=models.CASCADE)
