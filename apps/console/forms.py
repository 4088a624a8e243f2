from django import forms

from apps.tenancy.models import TOKEN_SCOPES, Membership, Tenant
from apps.tenancy.selectors import region_list


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150, widget=forms.TextInput(attrs={"autofocus": True}))
    password = forms.CharField(widget=forms.PasswordInput)


class CodeForm(forms.Form):
    code = forms.CharField(
        max_length=32,
        widget=forms.TextInput(
            attrs={"autofocus": True, "autocomplete": "one-time-code", "spellcheck": "false"}
        ),
        help_text="The six digits your authenticator app shows, or one of your recovery codes.",
    )


class UsernameForm(forms.Form):
    username = forms.CharField(max_length=150)


class TenantForm(forms.Form):
    slug = forms.SlugField(max_length=64)
    name = forms.CharField(max_length=200)
    home_region = forms.ModelChoiceField(queryset=None, to_field_name="slug")
    environment_class = forms.ChoiceField(choices=())

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["home_region"].queryset = region_list()
        self.fields["environment_class"].choices = Tenant.EnvironmentClass.choices
        if editing:
            del self.fields["slug"]  # the slug is how other services name the tenant
            self.fields["status"] = forms.ChoiceField(choices=Tenant.Status.choices)


class InvitationWithdrawForm(forms.Form):
    username = forms.CharField(max_length=150)


class MembershipForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=())

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["role"].choices = Membership.Role.choices


class ServiceAccountForm(forms.Form):
    name = forms.SlugField(max_length=64)
    description = forms.CharField(max_length=255, required=False)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    scopes = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, choices=())
    expires_at = forms.DateTimeField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scopes"].choices = [(scope, scope) for scope in TOKEN_SCOPES]
