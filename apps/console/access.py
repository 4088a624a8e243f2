"""Who may open the pages the console's chrome and its pages' related links point to,
so that no one is shown a link that answers "not open to you".

A page not named here is open to everyone signed in (its rows then narrowed by the
caller's tenant). Each entry restates its view's own check (a mixin's `test_func`, a
`_require(...)`): the crawl in tests/browser/test_crawl.py follows every link each demo
role is shown and fails on a refusal, so an entry that drifts from its view is caught.
"""

from __future__ import annotations

from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, TENANT_MEMBER, caller_kind

_OPERATORS = frozenset({OPERATOR})
_GOVERNORS = frozenset({OPERATOR, TENANT_ADMIN})

RESTRICTED: dict[str, frozenset[str]] = {
    "attention:queue": _OPERATORS,
    "eventing:overview": _OPERATORS,
    "eventing:dead-letter-list": _OPERATORS,
    "eventing:effect-list": _OPERATORS,
    "eventing:recent-list": _OPERATORS,
    "registry:subscription-list": _OPERATORS,
    "compute:link-list": _OPERATORS,
    "retention:overview": _OPERATORS,
    "retention:preview": _OPERATORS,
    "governance:order-list": _GOVERNORS,
    "console:audit-list": _GOVERNORS,
    "console:service-account-list": _GOVERNORS,
}


def kind_may_open(kind: str | None, url_name: str) -> bool:
    allowed = RESTRICTED.get(url_name)
    return allowed is None or kind in allowed


def person_kind(request) -> str | None:
    """The signed-in person's kind (apps.core.api.permissions.caller_kind). A page
    served outside the tenant scope (the account's own pages) has no role resolved:
    there the menu shows what a member may open, and an operator's."""
    if not hasattr(request, "membership_role"):
        return OPERATOR if getattr(request.user, "is_operator", False) else TENANT_MEMBER
    return caller_kind(request)


def openable(request, pages):
    """`(label, url name, ...)` tuples, those the person may open."""
    kind = person_kind(request)
    return [page for page in pages if kind_may_open(kind, page[1])]
