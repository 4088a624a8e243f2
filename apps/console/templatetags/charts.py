"""`{% chart some_chart %}`: draws an apps.console.charts.Chart in place."""

from django import template

register = template.Library()


@register.simple_tag
def chart(value):
    return value.render()
