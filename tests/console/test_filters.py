"""The lists' filter bar and empty lists (apps.console.listing, console/list.html): the
search box and the FilterSet's inline filters on one row, the rest folded, selects in
words, a chip per active filter that clears it alone, the search ranked exact, then
prefix, then the rest, and an empty list that says what fills it or what hides
everything, at the same number of statements whatever the rows."""

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from apps.assets.filters import AssetFilterSet
from tests.assets.factories import assets_added_to, new_asset, requested
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db
ASSETS = reverse("assets:asset-list")

LISTS = [
    "assets:asset-list",
    "compute:batch-list",
    "compute:link-list",
    "console:tenant-list",
    "console:audit-list",
    "console:service-account-list",
    "eventing:dead-letter-list",
    "eventing:effect-list",
    "eventing:recent-list",
    "registry:topic-list",
    "registry:subscription-list",
    "registry:version-list",
    "stores:binding-list",
    "stores:rule-list",
    "stores:certification-list",
    "stores:benchmark-list",
    "stores:contract-test-list",
    "stores:policy-list",
    "stores:pilot-list",
    "governance:order-list",
    "retention:rule-list",
    "retention:hold-list",
]


@pytest.fixture
def as_operator(client, operator):
    client.force_login(operator)
    return client


def bar(html: str) -> str:
    return re.search(r'<form method="get" class="filter-bar".*?</form>', html, re.S).group(0)


def chips(html: str) -> dict[str, str]:
    """Each chip's words and the address its × leads to."""
    found = re.search(r'<ul class="filter-chips".*?</ul>', html, re.S)
    if not found:
        return {}
    return {
        re.sub(r"<[^>]+>", "", label): unescape(href)
        for label, href in re.findall(
            r'<li><span>(.*?)</span> <a href="([^"]*)" aria-label', found.group(0)
        )
    }


def params(href: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(href).query)


@pytest.mark.parametrize("name", LISTS)
def test_every_list_speaks_in_words(as_operator, name):
    html = as_operator.get(reverse(name)).content.decode()
    assert "---------" not in html
    assert ">Unknown<" not in html
    form = bar(html)
    # the choice that filters nothing reads "Any", wherever a select has one
    for select in re.findall(r"<select.*?</select>", form, re.S):
        first = re.search(r"<option[^>]*>(.*?)</option>", select).group(1)
        assert first == "Any" or "multiple" in select, select


def test_the_inline_filters_sit_beside_the_search_and_the_rest_fold(as_operator):
    form = bar(as_operator.get(ASSETS).content.decode())
    row, folded = form.split('<details class="filter-more"', 1)
    assert 'type="search" name="q"' in row
    for name in AssetFilterSet.inline:
        assert f'name="{name}"' in row and f'name="{name}"' not in folded
    assert 'name="workflow_instance_id"' in folded
    assert "<summary>More filters</summary>" in folded
    # a boolean reads Any / Yes / No
    managed = re.search(r'<select name="workflow_managed".*?</select>', row, re.S).group(0)
    assert re.findall(r">([^<]+)</option>", managed) == ["Any", "Yes", "No"]


def test_a_folded_filter_in_use_keeps_the_fold_open(as_operator, tenant_a):
    html = as_operator.get(ASSETS, {"workflow_instance_id": "not-a-uuid"}).content.decode()
    assert '<details class="filter-more" open>' in html
    assert "More filters (1 chosen)" in html


def test_each_chip_clears_its_own_filter_and_keeps_the_rest(as_operator, tenant_a):
    new_asset(tenant_a, "acme")
    query = {"q": "acm", "status": "draft", "delegation_failed": "false", "sort": "name"}
    html = as_operator.get(ASSETS, query).content.decode()
    found = chips(html)
    assert set(found) == {
        "Search: acm",
        "Status: Draft",
        "Delegation refused or failed: No",
    }
    for label, href in found.items():
        left = params(href)
        assert left["sort"] == ["name"]
        assert len(left) == len(query) - 1, (label, left)
    assert "status" not in params(found["Status: Draft"])
    assert "q" not in params(found["Search: acm"])
    clear_all = re.search(r'<a href="([^"]*)">Clear all</a>', html).group(1)
    assert params(unescape(clear_all)) == {"sort": ["name"]}


def test_no_chip_without_a_filter(as_operator, tenant_a):
    html = as_operator.get(ASSETS, {"status": "", "workflow_managed": "unknown"}).content
    assert chips(html.decode()) == {}


def test_an_empty_list_offers_the_action_that_fills_it(as_operator):
    html = as_operator.get(ASSETS).content.decode()
    empty = re.search(r'<article class="empty-list">.*?</article>', html, re.S).group(0)
    assert "No assets yet." in empty
    assert f'href="{reverse("assets:asset-new")}">New asset</a>' in empty
    assert "<table" not in html


def test_an_empty_list_without_an_action_says_what_it_holds(as_operator):
    html = as_operator.get(reverse("eventing:dead-letter-list")).content.decode()
    empty = re.search(r'<article class="empty-list">.*?</article>', html, re.S).group(0)
    assert "No dead letters: every event was delivered" in empty and "<a " not in empty


def test_filters_that_hide_everything_are_named_with_the_way_back(as_operator, tenant_a):
    new_asset(tenant_a, "acme")
    html = as_operator.get(ASSETS, {"status": "approved", "q": "acme"}).content.decode()
    empty = re.search(r'<article class="empty-list">.*?</article>', html, re.S).group(0)
    text = re.sub(r"<[^>]+>", "", empty)
    assert "No assets match Search: acme and Status: Approved." in text
    links = dict(
        (label, params(unescape(href)))
        for href, label in re.findall(r'<a href="([^"]*)">([^<]+)</a>', empty)
    )
    assert links["Clear Status"] == {"q": ["acme"]}
    assert links["Clear Search"] == {"status": ["approved"]}
    assert links["Clear all"] == {}
    assert "New asset" not in empty


def suggested(html: str) -> dict[str, dict[str, list[str]]]:
    """The empty list's "Did you mean" names, each with its link's parameters."""
    empty = re.search(r'<article class="empty-list">.*?</article>', html, re.S).group(0)
    offer = re.search(r"<p>Did you mean (.*?)\?</p>", empty, re.S)
    if offer is None:
        return {}
    return {
        unescape(name): params(unescape(href))
        for href, name in re.findall(r'<a href="([^"]*)">([^<]+)</a>', offer.group(1))
    }


def test_a_search_that_finds_nothing_offers_the_names_like_it(as_operator, tenant_a):
    new_asset(tenant_a, "Acme ledger")
    requested(tenant_a, "Acme ledgers", delegate=False)
    html = as_operator.get(ASSETS, {"q": "acme ledgr", "status": "draft"}).content.decode()
    # the filters still hold: the requested one is not offered; the link keeps them
    assert suggested(html) == {"Acme ledger": {"q": ["Acme ledger"], "status": ["draft"]}}
    assert "Acme ledger" in as_operator.get(ASSETS, suggested(html)["Acme ledger"]).content.decode()
    # the first character is kept, as in the header's search
    assert suggested(as_operator.get(ASSETS, {"q": "ecme ledger"}).content.decode()) == {}
    # a list without a name column (the tenants' by the expression, not a column)
    tenants = as_operator.get(reverse("console:tenant-list"), {"q": "alpah"}).content.decode()
    assert list(suggested(tenants)) == [tenant_a.slug]


def test_suggestions_never_name_another_tenants_things(client, member_b, tenant_a):
    new_asset(tenant_a, "Acme ledger")
    client.force_login(member_b)
    assert suggested(client.get(ASSETS, {"q": "acme ledgr"}).content.decode()) == {}


def test_a_search_that_finds_nothing_costs_the_same_whatever_the_rows(as_operator, tenant_a):
    query = {"q": "assett-x", "status": "draft"}
    assert_flat_query_count(assets_added_to(tenant_a), lambda: as_operator.get(ASSETS, query))


def test_the_search_finds_by_prefix_and_within_and_ranks_exact_matches_first(as_operator, tenant_a):
    for name in ("big-acme", "acme-widgets", "zeta", "acme", "ACME-tools"):
        new_asset(tenant_a, name)
    response = as_operator.get(ASSETS, {"q": "acme"})
    names = [row.name for row in response.context["object_list"]]
    assert names[0] == "acme"
    assert set(names[1:3]) == {"acme-widgets", "ACME-tools"}
    assert names[3:] == ["big-acme"]
    # a chosen sort is the order, the search only narrows
    response = as_operator.get(ASSETS, {"q": "acme", "sort": "name"})
    assert [row.name for row in response.context["object_list"]] == sorted(
        ["big-acme", "acme-widgets", "acme", "ACME-tools"]
    )


def test_a_filtered_searched_list_costs_the_same_whatever_the_rows(as_operator, tenant_a):
    query = {"q": "asset", "status": "draft", "workflow_managed": "false"}
    assert_flat_query_count(assets_added_to(tenant_a), lambda: as_operator.get(ASSETS, query))


def test_past_the_cap_the_matches_keep_the_lists_order(as_operator, tenant_a, monkeypatch):
    """Ranking reads every match: past the paginator's cap the list keeps its sort (the
    newest first) and says it counted past the cap, as without a search."""
    from apps.console.listing import CappedPaginator

    for name in ("acme", "big-acme", "acme-widgets"):  # the newest last
        new_asset(tenant_a, name)
    monkeypatch.setattr(CappedPaginator, "cap", 3)
    response = as_operator.get(ASSETS, {"q": "acme"})
    assert [row.name for row in response.context["object_list"]] == [
        "acme",
        "acme-widgets",
        "big-acme",
    ]
    monkeypatch.setattr(CappedPaginator, "cap", 2)
    response = as_operator.get(ASSETS, {"q": "acme"})
    assert [row.name for row in response.context["object_list"]] == ["acme-widgets", "big-acme"]
    assert response.context["paginator"].capped
