"""The registry's console pages: topics, subscriptions, schema versions and approvals."""

import difflib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST
from django.views.generic import DetailView, TemplateView

from apps.console.confirm import confirmed
from apps.console.listing import Column, ListPage, OperatorRequiredMixin
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope
from apps.registry import charts, formats, selectors, versions
from apps.registry.filters import SchemaVersionFilterSet, SubscriptionFilterSet, TopicFilterSet
from apps.registry.services import NotPermitted
from apps.registry.versions import contracts


class OverviewView(LoginRequiredMixin, TemplateView):
    """Schema versions per topic over time and the acknowledgements still awaited."""

    template_name = "registry/overview.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["versions_chart"] = charts.versions_per_topic()
        context["acks_chart"] = charts.acknowledgements_outstanding()
        return context


class TopicListView(ListPage):
    title = "Topics"
    related_pages = (
        ("Overview", "registry:overview"),
        ("Subscriptions", "registry:subscription-list"),
        ("Schema approvals", "registry:approval-list"),
        ("Schema versions", "registry:version-list"),
    )
    filterset_class = TopicFilterSet
    search_fields = ("name", "description")
    search_name = "name"
    default_ordering = "name"
    columns = (
        Column("Topic", "name", sort="name"),
        Column("Description", "description", shows="wide"),
        Column("Producers", "producer_names"),
        Column("Consumers", "consumer_list"),
        Column("Schema version", "current_schema_version", sort="current_schema_version"),
        Column("Policy", "compatibility_policy", sort="compatibility_policy"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.topic_list()


class SubscriptionListView(OperatorRequiredMixin, ListPage):
    title = "Subscriptions"
    filterset_class = SubscriptionFilterSet
    search_fields = ("consumer__name", "topic__name", "endpoint")
    default_ordering = "topic__name"
    columns = (
        Column("Topic", "topic.name", sort="topic__name"),
        Column("Consumer", "consumer.name", sort="consumer__name"),
        Column("Transport", "get_transport_display", sort="transport", shows="wide"),
        Column("Endpoint", "endpoint", shows="wide"),
        Column("Active", "is_active", sort="is_active"),
        Column("Failures in a row", "consecutive_failures", sort="consecutive_failures"),
        Column("Last error", "last_error"),
        Column("Last delivered", "last_delivered_at", sort="last_delivered_at"),
    )

    def get_base_queryset(self):
        return selectors.subscription_list()


class ApprovalListView(ListPage):
    """Breaking versions waiting on their consumers, oldest first."""

    title = "Schema approvals"
    empty = "No schema change waits for approval."
    related_pages = (
        ("Topics", "registry:topic-list"),
        ("All versions", "registry:version-list"),
        ("Overview", "registry:overview"),
    )
    default_ordering = "created_at"
    columns = (
        Column("Version", "__str__", link=True),
        Column("Waiting on", "awaiting_names"),
        # Consumers whose declared reader reads the version: they need not act.
        Column("Reads it", "reads_it_names"),
        Column("Submitted by", "submitted_by.name"),
        Column("Release", "release"),
        Column("Waiting since", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.pending_versions()


class VersionListView(ListPage):
    title = "Schema versions"
    related_pages = (("Topics", "registry:topic-list"), ("Approvals", "registry:approval-list"))
    filterset_class = SchemaVersionFilterSet
    search_fields = ("topic__name", "release")
    default_ordering = "-created_at"
    columns = (
        Column("Version", "__str__", link=True),
        Column("State", "get_state_display", sort="state"),
        Column("Type", "get_schema_type_display", sort="schema_type"),
        Column("Fingerprint", "fingerprint"),
        Column("Release", "release"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.schema_version_list()


class VersionDetailView(LoginRequiredMixin, DetailView):
    """A version beside the one before it, the verdict's differences highlighted, and
    who has and has not acknowledged it."""

    template_name = "registry/version_detail.html"
    context_object_name = "version"

    def get_queryset(self):
        return selectors.schema_version_list()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        version = self.object
        before = selectors.published_before(version)
        context["before"] = before
        context["lines"] = side_by_side(
            before.schema if before else None, version.schema, version.schema_type
        )
        context["missing"] = (
            selectors.missing_acknowledgements(version)
            if version.state == "awaiting_acknowledgement"
            else []
        )
        context["may_override"] = self.request.user.is_operator and self.request.user.has_perm(
            "registry.override_schemaversion"
        )
        context["rules_changed"] = contracts.rules_changed(version, before)
        context["contract_rules"] = [
            (group, rule)
            for group in contracts.RULE_LISTS
            for rule in (version.rule_set or {}).get(group) or []
        ]
        return context


def side_by_side(old, new, kind: str = "JSON") -> list[tuple[str, str, bool]]:
    """Rows of (old line, new line, changed) of the two schemas as the console shows them
    (formats.schema_lines: JSON pretty-printed with sorted keys, a .proto file as text); a
    row is marked when its lines differ."""
    left = formats.schema_lines(kind, old) if old is not None else []
    right = formats.schema_lines(kind, new)
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right).get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            a = left[i1 + k] if i1 + k < i2 else ""
            b = right[j1 + k] if j1 + k < j2 else ""
            rows.append((a, b, tag != "equal"))
    return rows


@platform_scope
@require_POST
@login_required
def version_act(request, pk, act):
    """The console's way to the schema-version services (the API's is
    api.views.SchemaVersionViewSet): operators only, and each service's own rules for
    who may act on the version apply alike."""
    version = get_object_or_404(selectors.schema_version_list(), pk=pk)
    if not request.user.is_operator:
        raise PermissionDenied
    try:
        if act == "acknowledge":
            consumer = get_object_or_404(
                selectors.service_list(), name=request.POST.get("consumer", "")
            )
            versions.acknowledge(actor=request.actor, version=version, consumer=consumer)
        elif act == "withdraw":
            if confirmed(request, "withdrawing the version"):
                versions.withdraw_version(
                    actor=request.actor, version=version, reason=request.POST.get("reason", "")
                )
        elif act == "remind":
            versions.remind(actor=request.actor, version=version)
        elif act == "override":
            versions.override(
                actor=request.actor, version=version, reason=request.POST.get("reason", "")
            )
        else:
            raise PermissionDenied
    except NotPermitted as exc:
        raise PermissionDenied(exc.detail) from None  # refused, as the API refuses it: 403
    except DomainError as exc:
        messages.error(request, exc.detail)
    return HttpResponseRedirect(version.get_absolute_url())
