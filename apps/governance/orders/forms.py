from django import forms

from apps.governance.models import GovernanceOrder
from apps.governance.orders.selectors import tenant_choices


class OrderForm(forms.Form):
    # The view narrows the tenants to those the caller may govern.
    tenant = forms.ModelChoiceField(queryset=tenant_choices().none(), to_field_name="slug")
    kind = forms.ChoiceField(choices=GovernanceOrder.Kind.choices)
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Why: the request, contract clause or ticket. It is part of the evidence.",
    )
