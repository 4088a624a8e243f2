from django import forms

from apps.stores.models import (
    BenchmarkResult,
    ContractTestResult,
    MigrationPilot,
    PhysicalizationPolicy,
    ResidencyRule,
    Store,
    StoreProfile,
)
from apps.tenancy import selectors as tenancy


def _tenants():
    return tenancy.tenants_visible_to(platform_wide=True, tenant=None).order_by("slug")


class RuleForm(forms.Form):
    """The fields of services.rule_create, as an operator enters them."""

    tenant = forms.ModelChoiceField(
        _tenants(), required=False, empty_label="All tenants", to_field_name="slug"
    )
    data_class = forms.ModelChoiceField(
        tenancy.data_class_list(), required=False, empty_label="All data", to_field_name="slug"
    )
    effect = forms.ChoiceField(choices=ResidencyRule.Effect.choices)
    regions = forms.ModelMultipleChoiceField(
        tenancy.region_list(), required=False, to_field_name="slug"
    )
    geographies = forms.CharField(
        required=False, help_text="Jurisdictions, comma-separated (EU, IL, US)."
    )
    is_exception = forms.BooleanField(required=False, label="An allow-listed exception")
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_geographies(self) -> list[str]:
        raw = self.cleaned_data["geographies"]
        return [part.strip() for part in raw.split(",") if part.strip()]


class WhatIfForm(forms.Form):
    """The tenant's choices are the caller's visible tenants (set by the view)."""

    tenant = forms.ModelChoiceField(_tenants(), to_field_name="slug")
    store = forms.ModelChoiceField(Store.objects.all(), to_field_name="slug")
    profile = forms.ModelChoiceField(
        StoreProfile.objects.all(), required=False, to_field_name="slug"
    )
    region = forms.ModelChoiceField(tenancy.region_list(), to_field_name="slug")


class BenchmarkForm(forms.ModelForm):
    """The fields of services.benchmark_record."""

    class Meta:
        model = BenchmarkResult
        fields = [
            "provider",
            "query_shape",
            "profile",
            "figure",
            "threshold",
            "unit",
            "passed",
            "run_reference",
        ]


class ContractTestForm(forms.ModelForm):
    """The fields of services.contract_test_record."""

    class Meta:
        model = ContractTestResult
        fields = ["provider", "contract", "passed", "run_reference"]


class PilotForm(forms.ModelForm):
    """The fields of services.pilot_record."""

    class Meta:
        model = MigrationPilot
        fields = ["store", "profile", "outcome", "started_at", "ended_at", "notes", "run_reference"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 2})}


class PolicyForm(forms.ModelForm):
    """The fields of services.policy_record."""

    class Meta:
        model = PhysicalizationPolicy
        fields = [
            "profile",
            "workload_class",
            "kind",
            "description",
            "rollback_guidance",
            "run_reference",
        ]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "rollback_guidance": forms.Textarea(attrs={"rows": 3}),
        }
