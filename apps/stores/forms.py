from django import forms

from apps.stores.models import ResidencyRule, Store, StoreProfile
from apps.tenancy.models import DataClass, Region, Tenant


class RuleForm(forms.Form):
    tenant = forms.ModelChoiceField(
        Tenant.objects.order_by("slug"),
        required=False,
        empty_label="All tenants",
        to_field_name="slug",
    )
    data_class = forms.ModelChoiceField(
        DataClass.objects.all(), required=False, empty_label="All data", to_field_name="slug"
    )
    effect = forms.ChoiceField(choices=ResidencyRule.Effect.choices)
    regions = forms.ModelMultipleChoiceField(
        Region.objects.all(), required=False, to_field_name="slug"
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
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("slug"), to_field_name="slug")
    store = forms.ModelChoiceField(Store.objects.all(), to_field_name="slug")
    profile = forms.ModelChoiceField(
        StoreProfile.objects.all(), required=False, to_field_name="slug"
    )
    region = forms.ModelChoiceField(Region.objects.all(), to_field_name="slug")
