from rest_framework import serializers

from apps.core.codes import CoreCode


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


class StrictFieldsMixin:
    """Refuse fields the serializer does not know, instead of silently dropping them:
    a typo in a field name must not look like a successful change. Refuse NUL
    characters too: PostgreSQL stores none in text or JSON, and a look-up by a slug
    that holds one fails in the database rather than finding nothing."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            known = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - known)
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [
                            serializers.ErrorDetail("Unknown field.", code=CoreCode.UNKNOWN_FIELD)
                        ]
                        for name in unknown
                    }
                )
            with_nul = sorted(name for name, value in data.items() if _has_nul(value))
            if with_nul:
                message = "Null characters are not allowed."
                raise serializers.ValidationError(
                    {
                        name: [
                            serializers.ErrorDetail(
                                message, code=CoreCode.NULL_CHARACTERS_NOT_ALLOWED
                            )
                        ]
                        for name in with_nul
                    }
                )
        return super().to_internal_value(data)


class StrictSerializer(StrictFieldsMixin, serializers.Serializer):
    pass


class StrictModelSerializer(StrictFieldsMixin, serializers.ModelSerializer):
    pass


class _UnknownTenant:
    """A tenant slug no tenant has: only tenant_for_write decides how to answer it."""

    pk = None

    def __init__(self, slug: str):
        self.slug = slug

    def __bool__(self) -> bool:
        return True


class TenantSlugField(serializers.SlugRelatedField):
    """The tenant a write is for, named by its slug. An unknown slug is not refused
    here: a caller acting for one tenant must get the same answer for a slug no tenant
    has as for another tenant's (`tenant_mismatch`, from tenant_for_write), or they
    could list the other tenants' slugs one refusal at a time."""

    def __init__(self, **kwargs):
        kwargs.setdefault("slug_field", "slug")
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if getattr(exc.detail[0], "code", None) == CoreCode.DOES_NOT_EXIST:
                return _UnknownTenant(str(data))
            raise


def is_unknown_tenant(value) -> bool:
    return isinstance(value, _UnknownTenant)
