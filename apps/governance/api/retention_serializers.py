"""The retention API's serializers: rules, legal holds and sweeps."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.api.serializers import StrictModelSerializer, StrictSerializer, TenantSlugField
from apps.governance.models import LegalHold, RetentionRule, RetentionSweep
from apps.governance.orders.selectors import tenant_choices
from apps.governance.retention import selectors
from apps.stores.selectors import store_list
from apps.tenancy.selectors import data_class_list


def slug_of(queryset, **kwargs):
    return serializers.SlugRelatedField(slug_field="slug", queryset=queryset, **kwargs)


class RetentionRuleSerializer(StrictModelSerializer):
    data_class = slug_of(data_class_list(), required=False, allow_null=True)
    store = slug_of(store_list(), required=False, allow_null=True)
    # None for the rules set-up installs (Steward's own data classes' defaults).
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = RetentionRule
        fields = [
            "id",
            "name",
            "data_class",
            "store",
            "period_days",
            "action",
            "locked",
            "enabled",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_by", "created_at", "updated_at"]
        # The service says what is wrong with a rule (and a locked rule's refusals),
        # with stable codes; the model's own validators would answer first, vaguer.
        validators = []
        extra_kwargs = {"name": {"validators": []}, "period_days": {"min_value": 1}}


class LegalHoldSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # Null when the hold is wider (a data class, or the whole tenant) or not released.
    data_class = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    store = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    released_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    active = serializers.BooleanField(read_only=True)
    scope = serializers.CharField(source="scope_label", read_only=True)

    class Meta:
        model = LegalHold
        fields = [
            "id",
            "tenant",
            "data_class",
            "store",
            "scope",
            "reason",
            "active",
            "created_by",
            "created_at",
            "released_at",
            "released_by",
            "release_reason",
        ]
        read_only_fields = fields


class PlaceLegalHoldSerializer(StrictSerializer):
    tenant = TenantSlugField(
        queryset=tenant_choices(),
        required=False,
        help_text="For operators; a tenant's admins hold their own.",
    )
    data_class = slug_of(data_class_list(), required=False, allow_null=True)
    store = slug_of(store_list(), required=False, allow_null=True)
    reason = serializers.CharField(allow_blank=True)


class ReleaseLegalHoldSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True)


class RetentionSweepSerializer(StrictModelSerializer):
    purge_tasks_now = serializers.SerializerMethodField(
        help_text="The night's purge tasks by status now; receipts complete them."
    )

    class Meta:
        model = RetentionSweep
        fields = [
            "id",
            "night",
            "as_of",
            "started_at",
            "finished_at",
            "status",
            "runs",
            "results",
            "purge_tasks_now",
            "error",
        ]
        read_only_fields = fields

    def get_purge_tasks_now(self, sweep) -> dict[str, int]:
        outcomes = self.context.get("purge_outcomes")
        if outcomes is None:  # one sweep: ask for it alone
            outcomes = selectors.purge_outcomes([sweep.night])
        return outcomes.get(sweep.night.isoformat(), {})
