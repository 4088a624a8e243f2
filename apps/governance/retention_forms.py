from django import forms

from apps.governance.models import RetentionRule
from apps.stores.models import Store
from apps.tenancy.models import DataClass, Tenant


class RuleForm(forms.Form):
    name = forms.CharField(max_length=100)
    data_class = forms.ModelChoiceField(
        DataClass.objects.all(), required=False, to_field_name="slug", empty_label="Any"
    )
    store = forms.ModelChoiceField(
        Store.objects.all(), required=False, to_field_name="slug", empty_label="Any"
    )
    period_days = forms.IntegerField(min_value=1, label="Keep for (days)")
    action = forms.ChoiceField(choices=RetentionRule.Action.choices, label="Then")
    enabled = forms.BooleanField(required=False, initial=True)
    locked = forms.BooleanField(
        required=False,
        help_text="One-way: a locked rule can be lengthened, never shortened, disabled, "
        "changed otherwise or deleted.",
    )


class HoldForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("slug"), to_field_name="slug")
    data_class = forms.ModelChoiceField(
        DataClass.objects.all(), required=False, to_field_name="slug", empty_label="All data"
    )
    store = forms.ModelChoiceField(
        Store.objects.all(), required=False, to_field_name="slug", empty_label="All stores"
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))


class ReleaseForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Why release it")
