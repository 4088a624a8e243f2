"""Rotating a service account's token from its console page: a new secret with the same
scopes, shown once with a copy button; the old one keeps working for the overlap asked,
then is refused; near its end a token is flagged. Every act is audited."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import ApiToken, AuditEvent
from tests.factories import service_token

pytestmark = pytest.mark.django_db


def whoami(api, secret):
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return api.get("/api/v1/whoami/").status_code


def test_a_rotated_token_works_through_the_overlap_and_is_refused_after(
    client, operator, api, monkeypatch
):
    old = service_token(name="etl", scopes=["tenancy:read", "assets:read"])
    account = old.token.service_account
    client.force_login(operator)
    page = client.post(
        reverse("console:token-rotate", args=[account.pk, old.token.pk]), {"overlap": 3600}
    )
    new = page.context["issued"]
    body = page.content.decode()
    assert new.secret in body and 'data-copy="issued-secret"' in body
    assert new.token.scopes == ["assets:read", "tenancy:read"]
    assert new.token.expires_at is None  # the old one never expired: nor does this one
    with system_scope():
        stored = ApiToken.objects.get(pk=old.token.pk)
        audited = AuditEvent.objects.get(action="api_token.rotate")
    assert abs((stored.expires_at - timezone.now()) - timedelta(hours=1)) < timedelta(minutes=1)
    assert audited.changes["by"] == [None, new.token.prefix]
    # both work during the overlap
    assert whoami(api, old.secret) == 200 and whoami(api, new.secret) == 200
    # after it, the old one is refused and the new one still works
    later = timezone.now() + timedelta(hours=1, minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert whoami(api, old.secret) == 401
    assert whoami(api, new.secret) == 200


def test_a_token_near_its_end_is_flagged_and_an_ended_one_cannot_be_rotated(client, operator):
    soon = service_token(name="soon", expires_at=timezone.now() + timedelta(days=2))
    client.force_login(operator)
    page = client.get(
        reverse("console:service-account-detail", args=[soon.token.service_account.pk])
    )
    assert "ends in" in page.content.decode()
    account = soon.token.service_account
    services.api_token_revoke(actor=SYSTEM_ACTOR, token=soon.token)
    with system_scope(), pytest.raises(Conflict) as refused:
        services.api_token_rotate(actor=SYSTEM_ACTOR, token=soon.token, overlap=timedelta(hours=1))
    assert refused.value.code == "token_not_live"
    with system_scope():
        assert ApiToken.objects.filter(service_account=account).count() == 1


def test_an_overlap_beyond_a_week_is_refused_and_nothing_changes(client, operator):
    issued = service_token(name="etl")
    with pytest.raises(ValidationFailed) as refused:
        services.api_token_rotate(
            actor=SYSTEM_ACTOR, token=issued.token, overlap=timedelta(days=30)
        )
    assert refused.value.code == "invalid_overlap"
    client.force_login(operator)
    account = issued.token.service_account
    client.post(
        reverse("console:token-rotate", args=[account.pk, issued.token.pk]), {"overlap": "x"}
    )
    with system_scope():
        assert ApiToken.objects.filter(service_account=account).count() == 1
        assert ApiToken.objects.get(pk=issued.token.pk).expires_at is None
