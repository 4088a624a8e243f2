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
