"""Revoking a token from a service account's page asks for its confirmation
(apps.console.confirm)."""

import pytest
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db


def test_revoking_without_its_confirmation_changes_nothing_and_with_it_revokes(client, operator):
    account = services.service_account_create(actor=SYSTEM_ACTOR, name="platform-svc")
    services.api_token_issue(actor=SYSTEM_ACTOR, service_account=account, name="ci", scopes=[])
    with system_scope():
        token = ApiToken.objects.get(service_account=account)
    client.force_login(operator)
    page = client.get(reverse("console:service-account-detail", args=[account.pk])).content
    text = page.decode()
    assert '<summary role="button" class="secondary outline">Revoke</summary>' in text
    assert f"This will revoke <code>{token.prefix}…</code> now" in text
    url = reverse("console:token-revoke", args=[account.pk, token.pk])
    answer = client.post(url, follow=True)
    token.refresh_from_db()
    assert token.revoked_at is None
    assert "Nothing was done: revoking the token needs its confirmation." in (
        answer.content.decode()
    )
    client.post(url, {"confirm": "yes"})
    token.refresh_from_db()
    assert token.revoked_at is not None
