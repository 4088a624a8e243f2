"""The version page's actions: one toolbar, and withdrawing asks for its confirmation
(apps.console.confirm)."""

import re

import pytest
from django.contrib.auth.models import Permission

from apps.registry.models import SchemaVersion
from tests.query_counts import queries_for
from tests.registry.factories import V1, V2_BREAKING, pending, sync, waiting_version

pytestmark = pytest.mark.django_db


def toolbar_of(page: str) -> str:
    match = re.search(r'<div class="toolbar" id="version-actions">(.*?)\n</div>', page, re.S)
    assert match, "no toolbar of the version's actions"
    return match.group(1)


def test_the_version_pages_actions_sit_in_one_toolbar(client, operator):
    # given a version waiting on two consumers, and an operator who may override
    version = waiting_version()
    operator.user_permissions.add(Permission.objects.get(codename="override_schemaversion"))
    client.force_login(operator)
    # when its page is read
    page = client.get(version.get_absolute_url()).content.decode()
    # then every action is in the one toolbar, and none outside it
    toolbar = toolbar_of(page)
    for label in (
        "Remind them",
        "Acknowledge for billing",
        "Acknowledge for ledger",
        "Publish anyway",
        "Withdraw this version",
    ):
        assert label in toolbar, label
    acts = re.findall(rf'action="/registry/versions/{version.pk}/\w+/"', page)
    assert len(acts) == 5
    assert all(act in toolbar for act in acts)
    assert page.count('class="toolbar"') == 1


def test_withdrawing_without_its_confirmation_changes_nothing_and_with_it_withdraws(
    client, operator
):
    version = waiting_version()
    client.force_login(operator)
    page = client.get(version.get_absolute_url()).content.decode()
    # the real button is in a disclosure, next to what it will do
    confirm = re.search(r'<details class="confirm">(.*?)</details>', page, re.S).group(1)
    assert "Withdraw this version</summary>" in confirm
    assert f"This will withdraw v{version.version} of {version.topic}" in confirm
    assert '<input type="hidden" name="confirm" value="yes">' in confirm
    # a POST without the confirmation changes nothing and says so
    answer = client.post(f"/registry/versions/{version.pk}/withdraw/", {"reason": "x"}, follow=True)
    assert pending().pk == version.pk
    assert "Nothing was done: withdrawing the version needs its confirmation." in (
        answer.content.decode()
    )
    # with it, the version is withdrawn
    client.post(f"/registry/versions/{version.pk}/withdraw/", {"reason": "x", "confirm": "yes"})
    version.refresh_from_db()
    assert version.state == "withdrawn"


def test_the_version_page_costs_the_same_queries_for_more_consumers_waiting(client, operator):
    # given one version waiting on two consumers and another waiting on six
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    many = [f"c{n}" for n in range(6)]
    sync("r3", V1, name="orders.refund", consumers=many)
    sync("r4", V2_BREAKING, name="orders.refund", consumers=many)
    few_version, many_version = SchemaVersion.objects.filter(
        state="awaiting_acknowledgement"
    ).order_by("topic__name")
    assert few_version.topic.name == "orders.order"
    client.force_login(operator)
    client.get(few_version.get_absolute_url())  # the caller's first page fills the auth cache
    # when each page is read, then each costs the same, whatever the buttons it shows
    few = queries_for(lambda: client.get(few_version.get_absolute_url()))
    page = client.get(many_version.get_absolute_url()).content.decode()
    assert page.count("Acknowledge for c") == 6
    assert queries_for(lambda: client.get(many_version.get_absolute_url())) == few
