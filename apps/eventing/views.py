"""The console's eventing pages (operators)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView, TemplateView

from apps.console.charts import RANGES, chosen_range, range_links
from apps.console.confirm import confirmed
from apps.console.listing import Column, ListPage, OperatorRequiredMixin, RowAction
from apps.console.progress import Progress, reload_when_moved
from apps.console.redirects import redirect_next
from apps.core import counting
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope
from apps.eventing import charts, selectors, services
from apps.eventing.filters import (
    DeadLetterFilterSet,
    RecentEventFilterSet,
    UncertainEffectFilterSet,
)


class OverviewView(OperatorRequiredMixin, TemplateView):
    template_name = "eventing/overview.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        page = selectors.overview_page()
        span = chosen_range(self.request)
        context.update(
            overview=page.overview,
            counted_exactly=counting.COUNTED_EXACTLY,
            charts=charts.overview_charts(page, span),
            ranges=range_links(self.request, RANGES, span),
            subscriptions=page.subscriptions,
            recent=page.latest,
        )
        return context


class DeadLetterListView(OperatorRequiredMixin, ListPage):
    title = "Dead letters"
    empty = "No dead letters: every event was delivered or is still being tried."
    filterset_class = DeadLetterFilterSet
    search_fields = ("error", "event_type", "topic")
    default_ordering = "-created_at"
    columns = (
        Column("When", "created_at", sort="created_at", link=True),
        Column("Topic", "topic", sort="topic"),
        Column("Type", "event_type", sort="event_type", shows="wide"),
        Column("Consumer", "subscription.consumer.name", sort="subscription__consumer__name"),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Attempts", "attempts", sort="attempts", shows="wide"),
        Column("State", "get_state_display", sort="state"),
        Column("Error", "short_error"),
    )
    # Discarding is not a row action: it asks for confirmation, on the dead letter's page.
    row_actions = (RowAction("Replay", "eventing:dead-letter-replay", when="is_dead"),)
    # Read as `.values()` (apps.console.rows): what the cells, the link, `short_error`
    # and the action's `is_dead` read.
    row_fields = (
        "pk", "created_at", "topic", "event_type", "subscription__consumer__name",
        "tenant__slug", "attempts", "state", "error",
    )  # fmt: skip

    def get_base_queryset(self):
        return selectors.dead_letter_list()


class DeadLetterDetailView(OperatorRequiredMixin, DetailView):
    template_name = "eventing/dead_letter_detail.html"
    context_object_name = "dead"

    def get_queryset(self):
        return selectors.dead_letter_list()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["envelope_json"] = json.dumps(self.object.envelope, indent=2, sort_keys=True)
        context["progress"] = _replay_progress(self.object)
        return context


def _replay_progress(dead) -> Progress | None:
    """A queued replay, until a worker has delivered it (or failed to)."""
    if dead.state != dead.State.REPLAYING:
        return None
    return Progress(
        state=dead.state,
        said=f"Replay queued: a worker delivers the event to {dead.subscription.consumer.name}.",
        url=reverse("eventing:dead-letter-progress", args=[dead.pk]),
    )


@platform_scope
@login_required
def dead_letter_progress(request, pk):
    """The dead letter page's progress part while its replay is queued (apps.console.progress)."""
    if not request.user.is_operator:
        raise PermissionDenied
    dead = get_object_or_404(selectors.dead_letter_list(), pk=pk)
    if reload := reload_when_moved(request.GET.get("state"), dead.state):
        return reload
    return render(request, "console/_progress.html", {"progress": _replay_progress(dead)})


def _resolve(request, pk, service, verb: str):
    if not request.user.is_operator:
        raise PermissionDenied
    dead = get_object_or_404(selectors.dead_letter_list(), pk=pk)
    try:
        service(actor=request.actor, dead_letter=dead)
    except DomainError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Dead letter {dead.event_id} {verb}.")
    return redirect_next(request, "eventing:dead-letter-list")


@platform_scope
@login_required
@require_POST
def dead_letter_replay(request, pk):
    return _resolve(request, pk, services.dead_letter_replay, "queued for replay")


@platform_scope
@login_required
@require_POST
def dead_letter_discard(request, pk):
    if not confirmed(request, "discarding the dead letter"):
        return redirect_next(request, "eventing:dead-letter-list")
    return _resolve(request, pk, services.dead_letter_discard, "discarded")


class UncertainEffectListView(OperatorRequiredMixin, ListPage):
    title = "Uncertain effects"
    empty = "No uncertain effects: the outcome of every external call is known."
    template_name = "eventing/effect_list.html"
    row_cell_template = "eventing/_effect_cell.html"
    filterset_class = UncertainEffectFilterSet
    search_fields = ("external_ref", "last_error")
    default_ordering = "-created_at"
    columns = (
        Column("Created", "created_at", sort="created_at"),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Actor", "actor", sort="actor", shows="wide"),
        Column("System", "target_system", sort="target_system"),
        Column("Operation", "operation", sort="operation"),
        Column("Reference", "external_ref", shows="wide"),
        Column("State", "get_state_display", sort="state"),
        Column("Attempts", "attempts", sort="attempts", shows="wide"),
        Column("Next check", "next_check_at", sort="next_check_at"),
    )

    def get_base_queryset(self):
        return selectors.uncertain_effect_list()


class RecentEventListView(OperatorRequiredMixin, ListPage):
    title = "Recent events"
    empty = "No events seen recently."
    filterset_class = RecentEventFilterSet
    search_fields = ("aggregate_id", "event_type")
    default_ordering = "-received_at"
    columns = (
        Column("Received", "received_at", sort="received_at"),
        Column("Topic", "topic", sort="topic"),
        Column("Type", "event_type", sort="event_type"),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Aggregate", "aggregate_label"),
        Column("Event id", "event_id"),
    )

    def get_base_queryset(self):
        return selectors.recent_event_list()
