"""The chrome around every console page and a list page's column headers, written in
one pass (apps.console.context_processors, apps.console's `list_head`): the same markup
as the template code they replace, for every case that code had."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.template import engines
from django.templatetags.static import static
from django.test import override_settings
from django.urls import NoReverseMatch, reverse, set_script_prefix

from apps.console import context_processors
from apps.console.access import kind_may_open
from apps.console.context_processors import (
    CHROME_FILES,
    CHROME_PAGES,
    chrome_links,
    navigation,
)
from apps.console.listing import Column, ListPage
from apps.console.templatetags.console import list_head
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, TENANT_MEMBER
from apps.core.urls import fixed_prefix

# base.html's side navigation before it was written in one pass
NAVIGATION_LOOP = (
    '{% for item in navigation %}<li>{% if item.url %}<a href="{{ item.url }}"'
    '{% if item.active %} aria-current="page"{% endif %}>{{ item.label }}</a>{% else %}'
    '<span class="disabled" title="Not installed yet">{{ item.label }}</span>{% endif %}'
    "</li>{% endfor %}"
)
# list.html's column headers before `list_head`
HEAD_LOOP = (
    '{% for column in columns %}<th scope="col"'
    '{% if column.shows %} class="from-{{ column.shows }}"'
    '{% endif %}>{% if column.sort %}<a href="?'
    "{{ sort_query_string }}{% if sort_query_string %}&amp;{% endif %}sort="
    "{% if sort == column.sort %}-{% endif %}{{ column.sort }}"
    '">{{ column.label }}{% if sort == column.sort %} ▲{% elif sort == "-"|add:column.sort %}'
    " ▼{% endif %}</a>{% else %}{{ column.label }}{% endif %}</th>{% endfor %}"
)


def _items_as_before(path, *, kind, prefix):
    """The items base.html's loop was given: each reversed, None when not installed.
    (Under a script prefix the loop marked the dashboard, the prefix itself, on every
    page; the root it leaves unmarked is now the prefix rather than "/".)"""
    items = []
    for label, *names in context_processors.NAVIGATION:
        # the first of the entry's pages the caller may open, as the menu links it
        name = next((n for n in names if kind_may_open(kind, n)), None)
        if name is None:
            continue
        try:
            url = reverse(name)
        except NoReverseMatch:
            url = None
        active = url is not None and (path == url or (url != prefix and path.startswith(url)))
        items.append({"label": label, "url": url, "active": active})
    return items


@pytest.mark.parametrize("prefix", ["/", "/steward/"])
def test_the_navigation_is_the_loops_markup(prefix, monkeypatch):
    # a domain not installed, and a label that needs escaping
    monkeypatch.setattr(
        context_processors,
        "NAVIGATION",
        (*context_processors.NAVIGATION, ("Nowhere", "nowhere:page"), ("<R&D>", "console:search")),
    )
    loop = engines["django"].from_string(NAVIGATION_LOOP)
    set_script_prefix(prefix)
    try:
        paths = ["/", "/assets/", "/assets/abc/", "/eventing/", "/search/", "/nothing/", ""]
        for path in [prefix + p.lstrip("/") for p in paths]:
            for kind in (OPERATOR, TENANT_ADMIN, TENANT_MEMBER):
                items = _items_as_before(path, kind=kind, prefix=prefix)
                expected = loop.render({"navigation": items})
                assert navigation(path, kind=kind) == expected, (path, kind)
                with fixed_prefix():
                    assert navigation(path, kind=kind) == expected
        marked = navigation(prefix + "assets/abc/", kind=TENANT_MEMBER)
        assert marked.count('aria-current="page"') == 1
        assert '<span class="disabled" title="Not installed yet">Nowhere</span>' in marked
        assert "&lt;R&amp;D&gt;" in marked and "Attention" not in marked
    finally:
        set_script_prefix("/")


@pytest.mark.parametrize("prefix", ["/", "/steward/"])
def test_the_chrome_links_are_what_url_and_static_give(prefix):
    set_script_prefix(prefix)
    try:
        expected = {name: reverse(viewname) for name, viewname in CHROME_PAGES.items()}
        expected |= {name: static(path) for name, path in CHROME_FILES.items()}
        assert chrome_links() == expected
        with fixed_prefix():
            assert chrome_links() == expected
        with override_settings(STATIC_URL="/files/"):
            moved = chrome_links()
        assert moved["pico"] == "/files/vendor/pico-2.1.1.min.css" != expected["pico"]
        assert chrome_links() == expected
    finally:
        set_script_prefix("/")


def test_base_html_reads_only_links_the_chrome_has():
    """A name base.html reads that the chrome lacks would render as an empty link."""
    base = Path(settings.BASE_DIR, "templates", "base.html").read_text()
    read = set(re.findall(r"links\.(\w+)", base))
    assert read and read <= set(chrome_links())
    assert "{% url" not in base and "{% static" not in base


def test_a_signed_in_page_carries_the_chrome_links(client, operator):
    client.force_login(operator)
    html = client.get(reverse("eventing:overview")).content.decode()
    for url in [reverse("console:logout"), reverse("api-docs"), static("console/steward.css")]:
        assert f'"{url}"' in html
    assert f'<a href="{reverse("eventing:overview")}" aria-current="page">Eventing</a>' in html


def _list_pages(cls=ListPage):
    for sub in cls.__subclasses__():
        yield sub
        yield from _list_pages(sub)


def test_the_column_headers_are_the_loops_markup():
    loop = engines["django"].from_string(HEAD_LOOP)
    pages = list(_list_pages())
    assert len(pages) > 10
    column_sets = {page.columns for page in pages if page.columns}
    column_sets.add(
        (Column("<Name & co>", "name", sort="name"), Column("Plain", "plain", shows="wide"))
    )
    for columns in column_sets:
        sorts = ["", "-pk", "nothing"]
        sorts += [s for c in columns if c.sort for s in (c.sort, f"-{c.sort}")]
        for sort in sorts:
            for kept in ("", "q=a%26b&status=x", 'q=<b>"'):
                context = {"columns": columns, "sort": sort, "sort_query_string": kept}
                assert list_head(context) == loop.render(context), (columns, sort, kept)


def test_the_chromes_forms_carry_a_token_django_accepts(operator):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    html = client.get(reverse("assets:asset-list")).content.decode()
    tokens = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert len(tokens) >= 3 and len(set(tokens)) == 1
    theme = {"theme": "dark", "next": "/"}
    assert client.post(reverse("console:theme"), theme).status_code == 403
    answer = client.post(reverse("console:theme"), {**theme, "csrfmiddlewaretoken": tokens[0]})
    assert answer.status_code == 302 and answer.cookies["steward_theme"].value == "dark"
