"""The attention queue's console page: everything that waits on a person, by kind, each
item with the actions that resolve it. Operators only."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.attention import selectors, services
from apps.console.confirm import confirmed
from apps.core.api.permissions import OPERATOR, caller_kind
from apps.core.attention import kinds
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope


def _operators_only(request) -> None:
    if caller_kind(request) != OPERATOR:
        raise PermissionDenied


@platform_scope
@login_required
def queue_page(request):
    _operators_only(request)
    chosen = request.GET.get("kind") or None
    if chosen not in (None, *kinds()):
        chosen = None
    groups = selectors.queue(chosen)
    return render(
        request,
        "attention/queue.html",
        {
            "groups": groups,
            "chosen": chosen,
            "all_kinds": list(kinds().values()),
            "total": sum(g.count for g in groups),
        },
    )


@platform_scope
@require_POST
@login_required
def item_act(request, kind, key, action):
    _operators_only(request)
    found = kinds().get(kind)
    chosen = found.action(action) if found else None
    if chosen is not None and chosen.confirm and not confirmed(request, chosen.label.lower()):
        return HttpResponseRedirect(reverse("attention:queue"))
    try:
        said = services.item_act(
            actor=request.actor, kind=kind, key=key, action=action, data=request.POST
        )
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, said)
    back = reverse("attention:queue")
    if request.POST.get("back_to_kind"):
        back += f"?kind={kind}"
    return HttpResponseRedirect(back)
