from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString

from apps.tenancy.selectors import operator_tenant_choices

# Every domain has a place in the navigation; one whose console is not installed yet
# is shown disabled rather than hidden, so operators see the whole shape of Steward.
NAVIGATION = (
    ("Dashboard", "console:dashboard"),
    ("Attention", "attention:queue", "operators"),
    ("Tenants", "console:tenant-list"),
    ("Assets", "assets:asset-list"),
    ("Eventing", "eventing:overview"),
    ("Registry", "registry:topic-list"),
    ("Stores", "stores:binding-list"),
    ("Governance", "governance:order-list"),
    ("Retention", "retention:overview"),
    ("Compute", "compute:batch-list"),
    ("Audit", "console:audit-list"),
)


def _navigation(path: str, *, operator: bool):
    items = []
    for label, name, *who in NAVIGATION:
        if who and not operator:
            continue
        try:
            url = reverse(name)
        except NoReverseMatch:
            url = None
        active = url is not None and (path == url or (url != "/" and path.startswith(url)))
        items.append({"label": label, "url": url, "active": active})
    return items


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
    if user is None or not user.is_authenticated:
        return {"theme": request.COOKIES.get("steward_theme", "auto")}
    if user.is_operator:
        switchable = operator_tenant_choices()
    else:
        switchable = [
            (str(m.tenant_id), m.tenant.slug) for m in getattr(request, "available_memberships", [])
        ]
    acting = getattr(request, "tenant", None)
    return {
        "navigation": _navigation(request.path, operator=user.is_operator),
        "acting_tenant": acting,
        "tenant_options": tenant_options(switchable, acting),
        "theme": request.COOKIES.get("steward_theme", "auto"),
    }
