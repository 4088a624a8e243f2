"""The base of every Steward API viewset: scope-aware permissions, ETag on reads and
If-Match on writes (checked under a row lock), Idempotency-Key on create.

Core is the bottom layer and imports no other app: the viewset of platform catalog
rows, which writes through tenancy's audited service, is apps.tenancy.api.catalog."""

from __future__ import annotations

import contextlib
import hashlib
import json

from rest_framework import mixins, viewsets
from rest_framework.response import Response

from apps.core.api.idempotency import idempotent
from apps.core.api.permissions import EVERYONE, StewardAccess
from apps.core.api.serializers import is_unknown_tenant
from apps.core.codes import CoreCode
from apps.core.errors import PreconditionFailed, ValidationFailed
from apps.core.scope import owning_tenant_id, tenant_scope

UNSAFE_OBJECT_METHODS = ("PUT", "PATCH", "DELETE")


def etag_for(data) -> str:
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'


def _matches(header: str, etag: str) -> bool:
    candidates = {part.strip().removeprefix("W/") for part in header.split(",")}
    return "*" in candidates or etag in candidates


def tenant_for_write(request, named):
    """The tenant a create is for: a caller acting for a tenant creates for that one
    (naming another is refused); a platform-wide caller names it."""
    if request.tenant is not None:
        # The same refusal for a slug no tenant has (TenantSlugField) as for another's.
        if named is not None and (is_unknown_tenant(named) or named.pk != request.tenant.pk):
            raise ValidationFailed(
                "You act for another tenant than the one named.", code=CoreCode.TENANT_MISMATCH
            )
        return request.tenant
    if named is None:
        raise ValidationFailed("Name the tenant.", code=CoreCode.TENANT_REQUIRED, field="tenant")
    if is_unknown_tenant(named):
        raise ValidationFailed(
            f"No tenant has the slug {named.slug!r}.", code=CoreCode.DOES_NOT_EXIST, field="tenant"
        )
    return named


class StewardAccessMixin:
    """Who may call a view, for StewardAccess: `scope_app` names the token scopes,
    `read_access` and `write_access` the kinds of caller (narrowed per action by
    overriding the getters). Viewsets get it through StewardViewSetMixin; plain
    APIViews inherit it directly."""

    permission_classes = [StewardAccess]
    scope_app: str = ""
    read_access: frozenset[str] = EVERYONE
    write_access: frozenset[str] = frozenset()

    def get_read_access(self) -> frozenset[str]:
        return self.read_access

    def get_write_access(self) -> frozenset[str]:
        return self.write_access


class ServiceWritesMixin:
    """A model viewset whose writes are its app's services, so it holds no rule of its
    own: `create_service(actor=, **data)`, `update_service(actor=, <instance_kwarg>=,
    **data)` and `destroy_service(actor=, <instance_kwarg>=)`, each given as
    `staticmethod(services.x)`. A viewset leaves out the ones it does not serve."""

    create_service = update_service = destroy_service = None
    instance_kwarg = "instance"

    def perform_create(self, serializer):
        serializer.instance = self.create_service(
            actor=self.request.actor, **serializer.validated_data
        )

    def perform_update(self, serializer):
        serializer.instance = self.update_service(
            actor=self.request.actor,
            **{self.instance_kwarg: serializer.instance},
            **serializer.validated_data,
        )

    def perform_destroy(self, instance):
        self.destroy_service(actor=self.request.actor, **{self.instance_kwarg: instance})


class StewardViewSetMixin(StewardAccessMixin):
    def read_representation(self, obj) -> dict:
        """What GET answers for `obj`. A view whose writes take another shape keeps its
        read shape in `serializer_class` and returns the write one from
        get_serializer_class(); ETags and update answers always use the read shape."""
        return self.serializer_class(obj, context=self.get_serializer_context()).data

    def get_object(self):
        if self.request.method not in UNSAFE_OBJECT_METHODS:
            return super().get_object()
        obj = super().get_object()  # found in the caller's scope, permissions checked
        # Lock the row before comparing If-Match, so a concurrent writer cannot change it
        # between the check and this request's update. FOR UPDATE needs the owning
        # tenant's scope (row-level security applies write rules to it): a platform
        # caller reads in the system scope, so the lock is taken in the owner's. The
        # lock outlives that inner scope: it is held to the end of the transaction.
        owner = owning_tenant_id(obj)
        with tenant_scope(owner) if owner else contextlib.nullcontext():
            obj = type(obj).objects.select_for_update().get(pk=obj.pk)
        if_match = self.request.headers.get("If-Match")
        if if_match is not None:
            # The ETag a client holds came from a read, so compare with the read shape.
            current = etag_for(self.read_representation(obj))
            if not _matches(if_match, current):
                raise PreconditionFailed(
                    "The object has changed since it was read; fetch it again.",
                    code=CoreCode.STALE_ETAG,
                )
        return obj

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if (
            getattr(self, "action", None) in {"retrieve", "update", "partial_update"}
            and response.status_code == 200
            and isinstance(getattr(response, "data", None), dict)
        ):
            etag = etag_for(response.data)
            if request.method == "GET" and _matches(request.headers.get("If-None-Match", ""), etag):
                response = Response(status=304)
                response = super().finalize_response(request, response, *args, **kwargs)
            response["ETag"] = etag
        return response


# Create and update are mixins of their own rather than methods of StewardViewSetMixin:
# a router routes POST and PUT to every viewset that has `create` and `update`, so
# methods there gave read-only viewsets write routes that could only fail.


class IdempotentCreateMixin(mixins.CreateModelMixin):
    """DRF's create, with Idempotency-Key."""

    @idempotent
    def create(self, request, *args, **kwargs):
        return super().create(request, *args, **kwargs)


class ReadShapeUpdateMixin(mixins.UpdateModelMixin):
    """DRF's update, answering with the read shape (see read_representation)."""

    def update(self, request, *args, **kwargs):
        partial = kwargs.pop("partial", False)
        serializer = self.get_serializer(self.get_object(), data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        self.perform_update(serializer)
        return Response(self.read_representation(serializer.instance))


class StewardReadOnlyViewSet(StewardViewSetMixin, viewsets.ReadOnlyModelViewSet):
    pass
