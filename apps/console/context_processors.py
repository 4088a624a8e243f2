from django.conf import settings
from django.templatetags.static import static
from django.urls import NoReverseMatch
from django.utils.html import escape
from django.utils.safestring import SafeString

from apps.console.access import kind_may_open, person_kind
from apps.core.urls import fixed_prefix, reverse_fixed, script_prefix
from apps.tenancy.selectors import operator_tenant_choices

# Every domain has a place in the navigation; one whose console is not installed yet
# is shown disabled rather than hidden, so operators see the whole shape of Steward. An
# entry shows to those who may open one of its pages (apps.console.access), linking the
# first of them: a tenant admin's Retention is the rules, an operator's the sweeps.
NAVIGATION = (
    ("Dashboard", "console:dashboard"),
    ("Attention", "attention:queue"),
    ("Tenants", "console:tenant-list"),
    ("Assets", "assets:asset-list"),
    ("Eventing", "eventing:overview"),
    ("Registry", "registry:topic-list"),
    ("Stores", "stores:binding-list"),
    ("Governance", "governance:order-list"),
    ("Retention", "retention:overview", "retention:rule-list"),
    ("Compute", "compute:batch-list"),
    ("Audit", "console:audit-list"),
)

# What the chrome around every page links to, by the name base.html reads
# (`links.<name>`): pages by URL name, files by their static path.
CHROME_PAGES = {
    "dashboard": "console:dashboard",
    "search": "console:search",
    "switch_tenant": "console:switch-tenant",
    "admin": "admin:index",
    "two_factor": "console:two-factor",
    "service_accounts": "console:service-account-list",
    "api_docs": "api-docs",
    "theme": "console:theme",
    "invitations": "console:invitations",
    "logout": "console:logout",
}
CHROME_FILES = {
    "icon": "console/steward.svg",
    "pico": "vendor/pico-2.1.1.min.css",
    "css": "console/steward.css",
    "htmx": "vendor/htmx-2.0.11.min.js",
    "copy": "console/copy.js",
}
# (the settings a file's URL is made from, its path) -> the URL `{% static %}` gives
_files: dict[tuple, str] = {}


def _file_url(static_settings: tuple, path: str) -> str:
    key = (*static_settings, path)
    url = _files.get(key)
    if url is None:
        url = _files[key] = static(path)
    return url


def chrome_links() -> dict[str, str]:
    """The chrome's links, as `{% url %}` and `{% static %}` wrote them. The same on
    every page until the URL configuration, the script prefix or the static files'
    settings change, yet finding them each time was 8 % of a list page; within a
    `fixed_prefix()` block (as `console` calls it) each is a dictionary look-up."""
    links = {name: reverse_fixed(viewname) for name, viewname in CHROME_PAGES.items()}
    static_settings = (settings.STATIC_URL, repr(settings.STORAGES.get("staticfiles")))
    links.update((name, _file_url(static_settings, path)) for name, path in CHROME_FILES.items())
    return links


def navigation(path: str, *, kind: str | None) -> SafeString:
    """The side navigation's items for a caller of `kind`, the current domain's marked
    (the one whose URL the path is or starts with; the dashboard's, the site's root,
    only when it is the path), written in one pass as base.html's loop wrote them."""
    items, root = [], script_prefix()
    for label, *names in NAVIGATION:
        name = next((n for n in names if kind_may_open(kind, n)), None)
        if name is None:
            continue
        try:
            url = reverse_fixed(name)
        except NoReverseMatch:
            items.append(
                f'<li><span class="disabled" title="Not installed yet">{escape(label)}</span></li>'
            )
            continue
        active = path == url or (url != root and path.startswith(url))
        current = ' aria-current="page"' if active else ""
        items.append(f'<li><a href="{escape(url)}"{current}>{escape(label)}</a></li>')
    return SafeString("".join(items))


def tenant_options(switchable, acting) -> SafeString:
    """The tenant switcher's options, the acting tenant's selected. Written in one pass:
    an operator's every page lists up to 200 tenants, and the template loop that wrote
    them (a filter and a comparison per option) cost 2 ms of a 7 ms page at 200."""
    chosen = str(acting.pk) if acting is not None else None
    return SafeString(
        "".join(
            f'<option value="{escape(pk)}"{" selected" if pk == chosen else ""}>'
            f"{escape(slug)}</option>"
            for pk, slug in switchable
        )
    )


def console(request):
    user = getattr(request, "user", None)
    theme = request.COOKIES.get("steward_theme", "auto")
    if user is None or not user.is_authenticated:
        with fixed_prefix():  # the URL configuration and script prefix read once a page
            return {"theme": theme, "links": chrome_links()}
    if user.is_operator:
        switchable = operator_tenant_choices()
    else:
        switchable = [
            (str(m.tenant_id), m.tenant.slug) for m in getattr(request, "available_memberships", [])
        ]
    acting = getattr(request, "tenant", None)
    with fixed_prefix():
        kind = person_kind(request)
        links, items = chrome_links(), navigation(request.path, kind=kind)
    return {
        # The chrome's own restricted links (the account menu's service accounts).
        "may_open_service_accounts": kind_may_open(kind, CHROME_PAGES["service_accounts"]),
        "navigation": items,
        "links": links,
        "acting_tenant": acting,
        "tenant_options": tenant_options(switchable, acting),
        "theme": theme,
    }
