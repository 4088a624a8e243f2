"""The tenancy management commands: create_operator (reset_totp is exercised by the
console's two-factor journeys, tests/console/test_two_factor.py)."""

import pytest
from django.core.management import CommandError, call_command

from apps.core.scope import system_scope
from apps.tenancy.models import AuditEvent, User

pytestmark = pytest.mark.django_db


def test_create_operator_makes_an_audited_staff_account(monkeypatch):
    monkeypatch.setenv("OP_PASSWORD", "a long and unusual passphrase")
    call_command("create_operator", "alice", "--password-env", "OP_PASSWORD")
    user = User.objects.get(username="alice")
    assert user.is_operator and not user.is_superuser
    assert user.check_password("a long and unusual passphrase")
    with system_scope():
        assert AuditEvent.objects.filter(action="user.create", object_id=str(user.pk)).exists()


def test_create_operator_refuses_a_weak_password(monkeypatch):
    monkeypatch.setenv("OP_PASSWORD", "password")
    with pytest.raises(CommandError, match="too common"):
        call_command("create_operator", "bob", "--password-env", "OP_PASSWORD")
    assert not User.objects.filter(username="bob").exists()
