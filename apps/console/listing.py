"""The console's list pages: filter (the model's FilterSet), search, sort and paginate,
with the rows fetched by one selector query whatever the page size."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib.auth.mixins import LoginRequiredMixin, UserPassesTestMixin
from django.core.paginator import Paginator
from django.http import QueryDict
from django.urls import reverse
from django.utils.functional import cached_property
from django.views.generic import ListView

from apps.console.access import openable
from apps.console.rows import value_rows
from apps.core.api.filtering import named_filters, narrowed
from apps.core.api.permissions import caller_kind
from apps.core.counting import count_up_to
from apps.core.search import alike, searched


@dataclass(frozen=True)
class RowAction:
    """A button on each row (a POST form), shown where `row.<when>` is true."""

    label: str
    url_name: str  # reversed with the row's pk
    when: str = ""


@dataclass(frozen=True)
class Column:
    label: str
    attr: str  # dotted path on the row
    sort: str = ""  # ordering field, if the column sorts
    link: bool = False  # link to the row's get_absolute_url
    # Which windows show the column: "" every one; "wide" those 1440 px wide and more,
    # for a detail a table can lose at 1280 px so that its name, status, time and
    # changes stay on screen (static/console/steward.css, `.from-wide`).
    shows: str = ""
    # A code (`schema_version.acknowledge`): it wraps only after a "." or "_", never
    # inside a word as a narrow column otherwise breaks it (apps.console.cells.Cells.code).
    code: bool = False


@dataclass(frozen=True)
class Chip:
    """An active filter (or the search) as the filter bar shows it, and the list's
    query string without it."""

    label: str
    value: str
    param: str
    params: frozenset[str]
    clear: str = ""

    def cleared_from(self, query) -> Chip:
        return Chip(self.label, self.value, self.param, self.params, _without(query, self.params))


def _all_params(chips) -> set[str]:
    return {p for chip in chips for p in chip.params}


def _without(query, params) -> str:
    kept = query.copy()
    for param in params:
        kept.pop(param, None)
    return kept.urlencode()


class OperatorRequiredMixin(UserPassesTestMixin):
    """Operators' platform pages: across tenants, so in the system scope even while the
    operator acts for one tenant."""

    steward_scope = "system"

    def test_func(self):
        return getattr(self.request.user, "is_operator", False)


class CappedPaginator(Paginator):
    """Pages through the first `cap` matching rows and counts no further.

    A full COUNT reads every matching row on every page: at a million assets it was
    most of the asset list's time. Past the cap the page says "10,000+" and the filters,
    search or the opposite sort reach the rest, as search pages do; the pages up to the
    cap are numbered as before (their OFFSET stays under the cap). That a list reached
    past the cap is remembered for a few seconds (apps.core.counting.count_up_to).
    """

    cap = 10_000

    def __init__(self, object_list, per_page, *args, counted_rows=None, **kwargs):
        super().__init__(object_list, per_page, *args, **kwargs)
        # The rows to count, when the page's own query reads more than counting needs:
        # a list read as `.values()` joins the tables its cells show, and PostgreSQL
        # would join each counted row to them (0.79 against 0.66 ms for 10,000 rows).
        self.counted_rows = object_list if counted_rows is None else counted_rows

    @cached_property
    def counted(self) -> int:
        # One row past the cap tells "more than" from "exactly".
        return count_up_to(self.counted_rows, self.cap)

    @cached_property
    def count(self) -> int:
        return min(self.counted, self.cap)

    @property
    def capped(self) -> bool:
        return self.counted > self.cap


# (FilterSet class, filter name) -> the label and the widget's HTML with nothing chosen.
_EMPTY_WIDGETS: dict[tuple[type, str], tuple[str, str]] = {}
# The choice that filters nothing, as Django and django-filter name it ("---------",
# "Unknown"), and the value each gives it.
_ANY = "Any"
_NO_CHOICE = ("", "unknown", None)


@dataclass(frozen=True)
class FilterWidget:
    """One filter of a list's filter bar: shown inline or folded away (the FilterSet's
    `inline` names the inline ones), and its value in words when one is chosen."""

    name: str
    label: str
    html: str
    inline: bool
    chosen: str = ""


def in_words(form) -> None:
    """Name the choice that filters nothing "Any" on every select of the form (booleans
    read Any / Yes / No), in place of "---------" and "Unknown"."""
    for field in form.fields.values():
        if isinstance(field, forms.ModelChoiceField):
            # Its choices are the queryset's rows, read when drawn: relabel, don't list.
            if field.empty_label is not None:
                field.empty_label = _ANY
            continue
        widget = field.widget
        if isinstance(widget, forms.Select) and not widget.allow_multiple_selected:
            widget.choices = [
                (value, _ANY if value in _NO_CHOICE else label) for value, label in widget.choices
            ]


def _static(declared) -> bool:
    """A filter whose widget draws the same whatever the database holds: no queryset to
    choose from, no choices computed when the form is made."""
    return "queryset" not in declared.extra and not callable(declared.extra.get("choices"))


def bound_filterset(filterset_class, query, queryset):
    """The list's FilterSet for `query`, of the filters it names and those whose widget
    reads the database (drawn each time), or None when that is no filter.

    A filter the query does not name filters nothing and is always valid (as in the API,
    apps.core.api.filtering), yet copying, binding and validating every filter of the
    list's FilterSet was a tenth of a list page; its widget is drawn empty, once per
    process (filter_widgets)."""
    wanted = named_filters(filterset_class, query) | frozenset(
        name for name, declared in filterset_class.base_filters.items() if not _static(declared)
    )
    if not wanted:
        return None
    return narrowed(filterset_class, wanted)(query, queryset=queryset)


def _drawn_empty(filterset_class, name: str) -> tuple[str, str]:
    alone = narrowed(filterset_class, frozenset([name]))
    bound = alone(QueryDict(), queryset=filterset_class._meta.model._default_manager.none())
    in_words(bound.form)
    field = bound.form[name]
    return field.label, str(field)


def _chosen(bound) -> str:
    """The bound field's value as the filter bar's chip says it: a choice by its label."""
    value = bound.data
    values = value if isinstance(value, list) else [value]
    # NullBooleanSelect's data is a bool; its choices' values are "true" and "false".
    values = [
        str(v).lower() if isinstance(v, bool) else str(v) for v in values if v not in (None, "")
    ]
    field = bound.field
    if isinstance(field.widget, forms.Select) and not isinstance(field, forms.ModelChoiceField):
        labels = {str(v): str(label) for v, label in field.widget.choices}
        values = [labels.get(v, v) for v in values]
    return ", ".join(values)


def filter_widgets(filterset_class, filterset) -> list[FilterWidget]:
    """Each filter's label and widget, in the FilterSet's order, for the list's filter
    bar, with the value chosen in words.

    A filter with nothing chosen draws the same HTML on every page of its list, yet
    drawing the form's widgets through their templates was a sixth of a list page's
    time: an empty widget of a filter that reads nothing from the database is drawn
    once per process. One with a value is drawn each time (values are the caller's).
    """
    if filterset is not None:
        in_words(filterset.form)
    bound_fields = {bound.name: bound for bound in filterset.form} if filterset else {}
    inline = frozenset(getattr(filterset_class, "inline", ()))
    drawn = []
    for name, declared in filterset_class.base_filters.items():
        bound = bound_fields.get(name)  # None: not named, and static (see bound_filterset)
        if bound is not None:
            value = bound.data
            empty = value in (None, "") or (isinstance(value, list) and not any(value))
            if not empty or bound.errors or not _static(declared):
                chosen = "" if empty else _chosen(bound)
                drawn.append(FilterWidget(name, bound.label, str(bound), name in inline, chosen))
                continue
        key = (filterset_class, name)
        widget = _EMPTY_WIDGETS.get(key)
        if widget is None:
            widget = _EMPTY_WIDGETS[key] = (
                _drawn_empty(filterset_class, name) if bound is None else (bound.label, str(bound))
            )
        drawn.append(FilterWidget(name, *widget, inline=name in inline))
    return drawn


class ListPage(LoginRequiredMixin, ListView):
    template_name = "console/list.html"
    paginate_by = 50
    paginator_class = CappedPaginator
    filterset_class = None
    search_fields: tuple[str, ...] = ()
    columns: tuple[Column, ...] = ()
    default_ordering = "-pk"
    title = ""
    create: tuple[str, str, set[str]] | None = None  # (label, url name, caller kinds)
    row_actions: tuple[RowAction, ...] = ()
    related_pages: tuple[tuple[str, str], ...] = ()  # (label, url name) shown above the list
    # One more cell per row, a template rendered with the row (its header is the
    # template's `extra_column_header` block); the columns' cells are plain values.
    row_cell_template: str | None = None
    # The values a row's cells, link, actions and extra cell read (`tenant__slug` for a
    # related one), when the page reads its rows as `.values()` (apps.console.rows)
    # rather than as model instances; empty, it reads instances.
    row_fields: tuple[str, ...] = ()
    # What the list says when it holds nothing yet, before the action that fills it (the
    # page's `create`); empty, "No <title> yet.". When filters hide every row, the page
    # names them instead, each with a way to clear it.
    empty = ""
    # The column a search box's text is matched against by likeness when the search
    # finds nothing (apps.core.search.alike), and the model's folded copy of it, if it
    # keeps one: the empty list then offers the names like the text.
    search_name: str | None = None
    search_name_folded: str | None = None
    suggested = 5

    def get_base_queryset(self):
        raise NotImplementedError

    def get_queryset(self):
        queryset = self.get_base_queryset()
        self.filterset = None
        if self.filterset_class is not None:
            self.filterset = bound_filterset(self.filterset_class, self.request.GET, queryset)
        if self.filterset is not None:
            queryset = self.filterset.qs if self.filterset.is_valid() else queryset.none()
        self.search = self.request.GET.get("q", "").strip()
        searching = bool(self.search and self.search_fields)
        self.unsearched = queryset
        if searching:
            queryset = searched(queryset, self.search_fields, self.search)
        allowed = {c.sort for c in self.columns if c.sort}
        requested = self.request.GET.get("sort", "")
        self.sort = requested if requested.lstrip("-") in allowed else self.default_ordering
        # The tie-break runs the sort's way, so one index serves the sort both ways.
        order = (self.sort, "-pk" if self.sort.startswith("-") else "pk")
        self.counted = None
        if searching and requested.lstrip("-") not in allowed:
            # Unless a column's sort is chosen, the best matches come first: when they
            # are few enough to be paged through. Ranking reads every match (on 200,000
            # assets, 340 ms where the sort's index stopped at a page, 33 ms), and past
            # the cap the page is reached by narrowing, not by rank.
            self.counted = count_up_to(queryset, self.paginator_class.cap)
            if self.counted <= self.paginator_class.cap:
                order = ("search_rank", *order)
        queryset = queryset.order_by(*order)
        self.matching = queryset
        return queryset.values(*self.row_fields) if self.row_fields else queryset

    def get_paginator(self, queryset, per_page, orphans=0, allow_empty_first_page=True):
        paginator = self.paginator_class(
            queryset,
            per_page,
            orphans=orphans,
            allow_empty_first_page=allow_empty_first_page,
            counted_rows=self.matching,
        )
        if self.counted is not None:
            paginator.counted = self.counted  # counted once, to choose the order
        return paginator

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.row_fields:
            rows = value_rows(self.object_list.model, context["object_list"])
            context["object_list"] = rows
            context[self.get_context_object_name(self.object_list)] = rows
        query = self.request.GET.copy()
        query.pop("page", None)
        sort_query = query.copy()
        sort_query.pop("sort", None)
        widgets = (
            filter_widgets(self.filterset_class, self.filterset)
            if self.filterset_class is not None
            else []
        )
        chips = self._chips(query, widgets)
        context.update(
            title=self.title,
            columns=self.columns,
            filterset=self.filterset,
            filter_widgets=widgets,
            inline_filters=[w for w in widgets if w.inline],
            folded_filters=[w for w in widgets if not w.inline],
            folded_chosen=sum(1 for w in widgets if not w.inline and w.chosen),
            chips=chips,
            clear_all=_without(query, _all_params(chips)),
            empty=self.empty or f"No {self.title.lower()} yet.",
            suggestions=[] if context["object_list"] else self._suggestions(query),
            search=self.search,
            sort=self.sort,
            query_string=query.urlencode(),
            sort_query_string=sort_query.urlencode(),
            searchable=bool(self.search_fields),
            create_action=self._create_action(),
            row_actions=self.row_actions,
            related_pages=[
                (label, reverse(name)) for label, name in openable(self.request, self.related_pages)
            ],
        )
        return context

    def _chips(self, query, widgets: list[FilterWidget]) -> list[Chip]:
        """One chip per filter chosen (and the search), each with the list's address
        without it."""
        chips = []
        if self.search and self.search_fields:
            chips.append(Chip("Search", self.search, "q", frozenset(["q"])))
        for widget in widgets:
            if widget.chosen:
                params = frozenset(
                    p for p in query if widget.name in named_filters(self.filterset_class, [p])
                )
                chips.append(Chip(widget.label, widget.chosen, widget.name, params))
        return [chip.cleared_from(query) for chip in chips]

    def _suggestions(self, query) -> list[tuple[str, str]]:
        """The names like the search's text among the rows the filters leave, each with
        the list's address searching for it instead."""
        if not (self.search and self.search_name):
            return []
        rows = alike(
            self.unsearched,
            self.search,
            field=self.search_name,
            folded=self.search_name_folded,
            shown=self.suggested,
        )
        suggestions = []
        for name in dict.fromkeys(getattr(row, self.search_name) for row in rows):
            searching = query.copy()
            searching["q"] = name
            suggestions.append((name, searching.urlencode()))
        return suggestions

    def _create_action(self):
        if self.create is None or caller_kind(self.request) not in self.create[2]:
            return None
        label, url_name, _ = self.create
        return {"label": label, "url": reverse(url_name)}
