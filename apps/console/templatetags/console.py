from django import template

register = template.Library()


@register.filter
def attr(obj, dotted: str):
    """Follow a dotted attribute path on a row (`home_region.slug`)."""
    for part in dotted.split("."):
        if obj is None:
            return ""
        obj = getattr(obj, part, "")
        if callable(obj):
            obj = obj()
    return obj


@register.simple_tag
def row_action_url(action, row):
    from django.urls import reverse

    return reverse(action.url_name, args=[row.pk])


@register.filter
def shows(action, row) -> bool:
    return not action.when or bool(attr(row, action.when))
