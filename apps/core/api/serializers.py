from rest_framework import serializers


class StrictFieldsMixin:
    """Refuse fields the serializer does not know, instead of silently dropping them:
    a typo in a field name must not look like a successful change."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            known = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(set(data) - known)
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [serializers.ErrorDetail("Unknown field.", code="unknown_field")]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)


class StrictSerializer(StrictFieldsMixin, serializers.Serializer):
    pass


class StrictModelSerializer(StrictFieldsMixin, serializers.ModelSerializer):
    pass
