from django.urls import NoReverseMatch, reverse

from apps.tenancy.selectors import tenants_visible_to

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


def console(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"theme": request.COOKIES.get("steward_theme", "auto")}
    if user.is_operator:
        everyone = tenants_visible_to(platform_wide=True, tenant=None)
        switchable = [(str(pk), slug) for pk, slug in everyone.values_list("id", "slug")[:200]]
    else:
        switchable = [
            (str(m.tenant_id), m.tenant.slug) for m in getattr(request, "available_memberships", [])
        ]
    return {
        "navigation": _navigation(request.path, operator=user.is_operator),
        "acting_tenant": getattr(request, "tenant", None),
        "switchable_tenants": switchable,
        "theme": request.COOKIES.get("steward_theme", "auto"),
    }
