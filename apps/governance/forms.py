from django import forms

from apps.governance.models import GovernanceOrder
from apps.tenancy.models import Tenant


class OrderForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), to_field_name="slug")
    kind = forms.ChoiceField(choices=GovernanceOrder.Kind.choices)
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=2000,
        help_text="Why: the request, contract clause or ticket. It is part of the evidence.",
    )
