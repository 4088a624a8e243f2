"""One rotation per token (issue #36 item 11): twenty simultaneous rotations of one
token made twenty live tokens, one of them never expiring."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import ApiToken
from tests.factories import service_token
from tests.support import run_concurrently


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("expires_in", [None, timedelta(days=30)])
def test_simultaneous_rotations_of_one_token_make_one_successor(tenant_a, expires_in):
    expires_at = timezone.now() + expires_in if expires_in else None
    old = service_token(tenant=tenant_a, name="etl", expires_at=expires_at).token

    def rotate():
        return services.api_token_rotate(actor=SYSTEM_ACTOR, token=old, overlap=timedelta(hours=1))

    issued, errors = run_concurrently(rotate, 20)
    # then: one rotation took effect; every other one was refused, none failed otherwise
    assert len(issued) == 1, [getattr(e, "code", e) for e in errors]
    assert {type(e) for e in errors} == {Conflict}
    assert {e.code for e in errors} == {"token_already_rotated"}
    with system_scope():
        tokens = list(ApiToken.objects.filter(service_account=old.service_account))
        rotated = ApiToken.objects.get(pk=old.pk)
    assert len(tokens) == 2
    # the successor keeps the old token's expiry; the old one ends after the overlap
    assert issued[0].token.expires_at == expires_at
    assert rotated.rotated_at is not None and rotated.expires_at <= timezone.now() + timedelta(
        hours=1
    )


@pytest.mark.django_db
def test_a_rotated_token_is_not_rotated_again_but_its_successor_is(tenant_a):
    old = service_token(tenant=tenant_a, name="etl").token
    first = services.api_token_rotate(actor=SYSTEM_ACTOR, token=old, overlap=timedelta(hours=1))
    with pytest.raises(Conflict) as refused:
        services.api_token_rotate(actor=SYSTEM_ACTOR, token=old, overlap=timedelta(hours=1))
    assert refused.value.code == "token_already_rotated" and refused.value.status == 409
    second = services.api_token_rotate(
        actor=SYSTEM_ACTOR, token=first.token, overlap=timedelta(hours=1)
    )
    assert second.token.expires_at is None
