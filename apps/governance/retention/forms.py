from django import forms

from apps.governance.models import RetentionRule
from apps.governance.orders.selectors import tenant_choices
from apps.stores.selectors import store_list
from apps.tenancy.selectors import data_class_list


class RuleForm(forms.Form):
    name = forms.CharField(max_length=100)
    data_class = forms.ModelChoiceField(
        data_class_list(), required=False, to_field_name="slug", empty_label="Any"
    )
    store = forms.ModelChoiceField(
        store_list(), required=False, to_field_name="slug", empty_label="Any"
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
    tenant = forms.ModelChoiceField(tenant_choices().order_by("slug"), to_field_name="slug")
    data_class = forms.ModelChoiceField(
        data_class_list(), required=False, to_field_name="slug", empty_label="All data"
    )
    store = forms.ModelChoiceField(
        store_list(), required=False, to_field_name="slug", empty_label="All stores"
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}))


class ReleaseForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Why release it")
