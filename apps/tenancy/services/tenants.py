"""Tenants, their memberships and the platform catalog (regions, data classes)."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models, transaction
from django.db.models import ProtectedError
from django.utils import timezone
from guardian.shortcuts import assign_perm, remove_perm

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, NotFound, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy import auth_cache
from apps.tenancy.audit import audit_record, diff, snapshot
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import (
    Membership,
    Region,
    Tenant,
    User,
)

TENANT_FIELDS = ["slug", "name", "environment_class", "home_region", "status"]


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
