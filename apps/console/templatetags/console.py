import json

from django import template
from django.template.defaulttags import CsrfTokenNode
from django.template.loader import get_template
from django.utils import formats, timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import mark_safe

from apps.console import access
from apps.console.cells import Cells, change_lines
from apps.core.urls import fixed_prefix, reverse_pk

register = template.Library()


@register.filter
def attr(obj, dotted: str):
    """Follow a dotted attribute path on a row (`home_region.slug`)."""
    return _follow(obj, dotted.split("."))


def _follow(obj, parts):
    for part in parts:
        if obj is None:
            return ""
        obj = getattr(obj, part, "")
        if callable(obj):
            obj = obj()
    return obj


@register.simple_tag
def row_action_url(action, row):
    return reverse_pk(action.url_name, row.pk)


@register.simple_tag(takes_context=True)
def list_head(context):
    """A list page's column headers, in one pass as the template loop wrote them: a
    sortable column links to its sort (the opposite way when it is the current one,
    marked ▲ or ▼), keeping the page's other query parameters."""
    sort, kept = context["sort"], context["sort_query_string"]
    prefix = f"?{conditional_escape(kept)}&amp;sort=" if kept else "?sort="
    cells = []
    for column in context["columns"]:
        label = conditional_escape(column.label)
        key = column.sort
        if key:
            key_text = conditional_escape(key)
            turn = "-" if sort == key else ""
            mark = " ▲" if sort == key else " ▼" if sort == f"-{key}" else ""
            label = f'<a href="{prefix}{turn}{key_text}">{label}{mark}</a>'
        cells.append(f'<th scope="col"{_shows(column)}>{label}</th>')
    return mark_safe("".join(cells))  # noqa: S308 - every value above is escaped


def _shows(column) -> str:
    """The class that hides a column in narrower windows (Column.shows), as an attribute."""
    return f' class="from-{column.shows}"' if column.shows else ""


@register.simple_tag(takes_context=True)
def list_rows(context):
    """A list page's body rows (apps.console.listing.ListPage), in one pass.

    The same cells the template loop wrote (each value as `{{ }}` renders it: local
    time, localized, escaped), without a template node per cell: fifty rows of six
    columns were most of a list page's time. A page's one extra cell per row is its
    view's `row_cell_template`, rendered with the row."""
    columns, actions = context["columns"], context.get("row_actions") or ()
    view = context.get("view")
    extra = getattr(view, "row_cell_template", None)
    # the engine's template, rendered in this page's context (already bound: no context
    # processor runs again per row)
    extra = get_template(extra).template if extra else None
    csrf = next_input = None
    if actions:
        csrf = CsrfTokenNode().render(context)
        next_input = format_html(
            '<input type="hidden" name="next" value="{}">', context["request"].get_full_path()
        )
    with fixed_prefix():  # fifty rows' links and actions, one URL prefix
        rows = _rows(context, columns, extra, actions, csrf, next_input)
    if not rows:
        span = len(columns) + 1
        rows.append(f'<tr><td colspan="{span}">Nothing matches.</td></tr>')
    return mark_safe("\n".join(rows))  # noqa: S308 - every value above is escaped


def _rows(context, columns, extra, actions, csrf, next_input) -> list[str]:
    write, rows = Cells(context), []
    paths = [
        (
            column.attr.split("."),
            write.code if column.code else write.cell,
            column.link,
            _shows(column),
        )
        for column in columns
    ]
    for row in context["object_list"]:
        cells, url = [], None
        for parts, written, link, hidden_below in paths:
            shown = written(_follow(row, parts))
            if link:
                url = url or conditional_escape(row.get_absolute_url())
                shown = f'<a href="{url}">{shown}</a>'
            cells.append(f"<td{hidden_below}>{shown}</td>")
        if extra is not None:
            with context.push(row=row):
                cells.append(extra.render(context))
        if actions:
            forms = "".join(
                f'<form method="post" action="{conditional_escape(row_action_url(a, row))}"'
                f' class="inline">{csrf}{next_input}<button type="submit"'
                f' class="secondary outline">{conditional_escape(a.label)}</button></form>'
                for a in actions
                if shows(a, row)
            )
            cells.append(f'<td class="actions">{forms}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return rows


@register.filter
def openable(pages, request):
    """`related_pages|openable:request`: the (label, url name) pairs the person may open."""
    return access.openable(request, pages)


@register.filter
def shows(action, row) -> bool:
    return not action.when or bool(attr(row, action.when))


# Records: any JSON value (evidence data, receipts, audit changes, effect results) shown
# as labelled definition lists and tables, so no page prints a Python dict. A page passes
# `links`, {value: url}, for the ids it can resolve; the tag cannot, being beneath the
# domains that own those objects.

_RECORD_DEPTH = 6


@register.filter
def humanise(key) -> str:
    """`rows_deleted` → "Rows deleted", `binding_id` → "Binding id"."""
    text = str(key).replace("_", " ").replace("-", " ").strip()
    return text[:1].upper() + text[1:] if text else "—"


def _moment(value: str):
    if len(value) < 19 or value[4:5] != "-" or value[10:11] not in ("T", " "):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def _scalar(value, links):
    if value is None or value == "":
        return format_html('<span class="muted">{}</span>', "—")
    if isinstance(value, bool):
        return format_html("{}", "yes" if value else "no")
    text = str(value)
    url = links.get(text) if links else None
    if isinstance(value, str) and (moment := _moment(text)) is not None:
        if timezone.is_aware(moment):
            moment = timezone.localtime(moment)
        shown = formats.date_format(moment, "DATETIME_FORMAT")
        return format_html('<time datetime="{}">{}</time>', text, shown)
    if url:
        return format_html('<a href="{}">{}</a>', url, text)
    if isinstance(value, int | float):
        return format_html("{}", value)
    return format_html("<span>{}</span>", text)


def _render(value, links, depth: int):
    if depth > _RECORD_DEPTH:
        return format_html("<code>{}</code>", value)
    if isinstance(value, dict):
        if not value:
            return format_html('<span class="muted">{}</span>', "—")
        return format_html(
            '<dl class="record">{}</dl>',
            format_html_join(
                "",
                "<dt>{}</dt><dd>{}</dd>",
                ((humanise(k), _render(v, links, depth + 1)) for k, v in value.items()),
            ),
        )
    if isinstance(value, list | tuple):
        if not value:
            return format_html('<span class="muted">{}</span>', "none")
        if all(isinstance(item, dict) for item in value):
            keys = list(dict.fromkeys(k for item in value for k in item))
            head = format_html_join("", '<th scope="col">{}</th>', ((humanise(k),) for k in keys))
            rows = format_html_join(
                "",
                "<tr>{}</tr>",
                (
                    (
                        format_html_join(
                            "",
                            "<td>{}</td>",
                            ((_render(item.get(k), links, depth + 1),) for k in keys),
                        ),
                    )
                    for item in value
                ),
            )
            return format_html(
                # Focusable: a keyboard scrolls a table wider than its cell.
                '<div class="record-scroll" tabindex="0"><table class="record">'
                "<thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>",
                head,
                rows,
            )
        return format_html(
            '<ul class="record">{}</ul>',
            format_html_join("", "<li>{}</li>", ((_render(v, links, depth + 1),) for v in value)),
        )
    return _scalar(value, links)


@register.simple_tag
def record(value, links=None, raw=False):
    """`{% record entry.data links=record_links raw=True %}`: the value as nested
    definition lists (objects) and tables (lists of objects) with humanised labels, dates
    formatted, values found in `links` linked; with `raw`, the JSON one click away."""
    shown = _render(value, links or {}, 0)
    return format_html("{}{}", shown, record_json(value)) if raw else shown


@register.simple_tag
def record_changes(changes, links=None, raw=False):
    """An audit row's `{field: [before, after]}` as one line per field, "status: — →
    requested" (apps.console.cells.change_lines), each value as `record` writes it."""
    if not isinstance(changes, dict) or not changes:
        return record(changes, links, raw)
    lines = mark_safe(  # noqa: S308 - change_lines escapes the names, _render the values
        change_lines(changes, lambda value: _render(value, links or {}, 1))
    )
    return format_html("{}{}", lines, record_json(changes)) if raw else lines


@register.simple_tag(takes_context=True)
def cell(context, value):
    """`{% cell value %}`: a detail page's value as a list's cell writes it (a dash for
    nothing, ✓ or — for yes or no, changes as lines): apps.console.cells.Cells.cell."""
    return mark_safe(Cells(context).cell(value))  # noqa: S308 - Cells escapes


@register.simple_tag(takes_context=True)
def code_cell(context, value):
    """`{% code_cell value %}`: a code (an audit action) as a list's code column writes
    it, wrapping only after a "." or "_" (apps.console.cells.Cells.code): the tables
    that show a few audit rows break them as the audit trail does."""
    return mark_safe(Cells(context).code(value))  # noqa: S308 - Cells escapes


@register.simple_tag
def record_json(value, summary="JSON"):
    """The value as pretty-printed JSON inside a closed <details>."""
    text = json.dumps(value, indent=2, sort_keys=True, default=str)
    return format_html(
        '<details class="raw-json"><summary>{}</summary><pre><code>{}</code></pre></details>',
        summary,
        text,
    )
