"""A dead letter's page: its actions on one toolbar, and discarding asks for its
confirmation (apps.console.confirm); the list offers no one-click discard."""

import pytest
from django.urls import reverse

from apps.core.scope import system_scope
from apps.eventing.models import DeadLetter
from tests.eventing.factories import make_dead_letter

pytestmark = pytest.mark.django_db


def state_of(dead):
    with system_scope():
        return DeadLetter.objects.get(pk=dead.pk).state


def test_discarding_without_its_confirmation_changes_nothing_and_with_it_discards(
    client, operator, tenant_a, topic, webhook_subscription
):
    dead = make_dead_letter(tenant_a, topic, webhook_subscription, n=1)
    client.force_login(operator)
    page = client.get(reverse("eventing:dead-letter-detail", args=[dead.pk])).content.decode()
    assert '<div class="toolbar">' in page
    assert '<summary role="button" class="secondary outline">Discard</summary>' in page
    assert f"This will discard event <code>{dead.event_id}</code>" in page
    url = reverse("eventing:dead-letter-discard", args=[dead.pk])
    answer = client.post(url, follow=True)
    assert state_of(dead) == "dead"
    assert "Nothing was done: discarding the dead letter needs its confirmation." in (
        answer.content.decode()
    )
    client.post(url, {"confirm": "yes"})
    assert state_of(dead) == "discarded"


def test_the_dead_letter_list_replays_in_one_click_but_does_not_discard(
    client, operator, tenant_a, topic, webhook_subscription
):
    dead = make_dead_letter(tenant_a, topic, webhook_subscription, n=1)
    client.force_login(operator)
    page = client.get(reverse("eventing:dead-letter-list")).content.decode()
    assert reverse("eventing:dead-letter-replay", args=[dead.pk]) in page
    assert reverse("eventing:dead-letter-discard", args=[dead.pk]) not in page
