"""Issue 41's console: state shown as people read it (no None, True, False or Python
dict in a cell), a menu of only what the person may open, Steward's own page for any
refusal with the way back, and create pages that ask for the tenant in the all-tenants
view."""

import re

import pytest
from django.template import Context
from django.urls import reverse

from apps.console.access import RESTRICTED
from apps.console.cells import Cells
from apps.console.context_processors import NAVIGATION
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.models import ServiceAccount

pytestmark = pytest.mark.django_db

RAW = re.compile(r"<td[^>]*>\s*(None|True|False)\s*</td>|\{&#x27;|\{'")


def test_a_cell_writes_state_as_people_read_it():
    write = Cells(Context())
    assert ">—<" in write.cell(None) and write.cell("") == write.cell(None)
    assert "✓" in write.cell(True) and ">yes<" in write.cell(True)
    assert "True" not in write.cell(True) and ">no<" in write.cell(False)
    changes = write.cell({"status": [None, "requested"], "home_region": ["a", "b"]})
    text = re.sub(r"<[^>]+>", "", changes)
    assert "status: — →becomes requested" in text and "home region: a →becomes b" in text
    assert changes.count("<li>") == 2 and "{" not in text
    assert write.cell("<b>") == "&lt;b&gt;" and write.cell(3) == "3"


def test_a_list_shows_a_yes_as_a_tick_never_true(client, operator):
    services.service_account_create(actor=SYSTEM_ACTOR, name="pipeline", tenant=None)
    client.force_login(operator)
    html = client.get(reverse("console:service-account-list")).content.decode()
    assert "pipeline" in html and "✓" in html
    assert not RAW.search(html), RAW.search(html)


def test_the_tenant_page_shows_its_changes_one_line_per_field(client, operator, region):
    tenant = services.tenant_create(actor=SYSTEM_ACTOR, slug="gamma", name="G", home_region=region)
    client.force_login(operator)
    html = client.get(tenant.get_absolute_url()).content.decode()
    assert '<ul class="changes">' in html
    assert not RAW.search(html), RAW.search(html)


@pytest.mark.parametrize("who", ["operator", "admin_a", "member_b"])
def test_the_menu_links_only_what_the_person_may_open(client, who, request):
    client.force_login(request.getfixturevalue(who))
    html = client.get("/").content.decode()
    menu = re.search(r'<nav aria-label="Domains">(.*?)</nav>', html, re.S).group(1)
    links = re.findall(r'href="([^"]+)"', menu)
    links += re.findall(r'href="(/service-accounts/)"', html)
    assert links
    for url in links:
        assert client.get(url).status_code == 200, url
    shown = set(re.findall(r">([^<]+)</a>", menu))
    if who == "operator":
        assert shown == {entry[0] for entry in NAVIGATION}
    else:
        assert {"Attention", "Eventing"}.isdisjoint(shown) and "Assets" in shown
    if who == "member_b":
        assert {"Governance", "Audit"}.isdisjoint(shown) and "Service accounts" not in html


def test_a_refusal_is_stewards_own_page_with_the_way_back(client, member_b):
    client.force_login(member_b)
    for url in ("/eventing/", reverse("console:audit-list"), "/no-such-page/"):
        response = client.get(url, HTTP_REFERER="http://testserver/assets/")
        html = response.content.decode()
        assert response.status_code in (403, 404), url
        assert 'class="steward-error"' in html and "Forbidden" not in html
        assert '<a href="/assets/">Back to the page you came from</a>' in html
        assert '<a href="/">Back to the dashboard</a>' in html
    # another site's address is never offered as the way back
    html = client.get("/eventing/", HTTP_REFERER="https://elsewhere.example/x").content.decode()
    assert "elsewhere" not in html and "Back to the dashboard" in html
    # and the API keeps its problem answers
    api = client.get("/api/v1/no-such-endpoint/")
    assert api["Content-Type"] == "application/problem+json"


def test_every_restricted_page_refuses_whom_the_menu_hides_it_from(client, member_b):
    client.force_login(member_b)
    for name in RESTRICTED:
        response = client.get(reverse(name))
        assert response.status_code == 403, name
        assert 'class="steward-error"' in response.content.decode()


def test_a_create_page_in_the_all_tenants_view_asks_for_the_tenant(client, operator, tenant_a):
    client.force_login(operator)
    html = client.get("/assets/new/").content.decode()
    assert 'aria-label="Choose the tenant"' in html and tenant_a.slug in html
    chosen = client.post(
        reverse("console:switch-tenant"), {"tenant": str(tenant_a.pk), "next": "/assets/new/"}
    )
    assert chosen.status_code == 302 and chosen.url == "/assets/new/"
    assert 'aria-label="Choose the tenant"' not in client.get("/assets/new/").content.decode()


def test_a_service_account_in_the_all_tenants_view_is_said_to_be_the_platforms(
    client, operator, tenant_a
):
    client.force_login(operator)
    html = client.get(reverse("console:service-account-create")).content.decode()
    assert "a new account is the platform&#x27;s" in html
    assert 'aria-label="Choose the tenant"' in html
    client.post(reverse("console:service-account-create"), {"name": "platform-one"})
    with system_scope():
        assert ServiceAccount.objects.get(name="platform-one").tenant_id is None
