from django import forms

from apps.assets.models import Asset


class AssetForm(forms.Form):
    name = forms.CharField(max_length=Asset._meta.get_field("name").max_length)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
