"""`{% url %}` as Django's, with a pattern that takes no arguments reversed once per URL
configuration, script prefix and current application (apps.core.urls.reverse_fixed).

Django's tag reverses on every render: the eventing page's five links to other pages
were 8 % of its web process. A builtin library of the template engine (settings'
TEMPLATES), so every template's `{% url %}` is this one; with arguments, or `as` a
variable, it is Django's own.
"""

from __future__ import annotations

from django import template
from django.template.defaulttags import URLNode
from django.template.defaulttags import url as django_url
from django.utils.html import conditional_escape

from apps.core.urls import reverse_fixed

register = template.Library()


class FixedURLNode(URLNode):
    def render(self, context):
        if self.args or self.kwargs or self.asvar:
            return super().render(context)
        # The current application as Django's tag finds it.
        try:
            current_app = context.request.current_app
        except AttributeError:
            try:
                current_app = context.request.resolver_match.namespace
            except AttributeError:
                current_app = None
        url = reverse_fixed(self.view_name.resolve(context), current_app)
        return conditional_escape(url) if context.autoescape else url


@register.tag
def url(parser, token):
    node = django_url(parser, token)
    return FixedURLNode(node.view_name, node.args, node.kwargs, node.asvar)
