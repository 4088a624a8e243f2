"""Every template's `{% url %}` is apps.console.templatetags.urls: for each URL of
Steward's that takes no argument it writes what Django's own tag writes, under any
script prefix and current application, escaped or not, and with arguments or `as` a
variable it is Django's tag."""

import pytest
from django.template import Context, Engine, RequestContext, engines
from django.test import RequestFactory
from django.urls import NoReverseMatch, set_script_prefix

from apps.console.templatetags.urls import FixedURLNode
from tests.core.test_urls import _names_taking

# Django's template language as it comes, for the reference answer.
DJANGOS = Engine()
OURS = engines["django"].engine


def _request(namespace: str | None, current_app: str | None = None):
    request = RequestFactory().get("/")
    if namespace is not None:
        request.resolver_match = type("Match", (), {"namespace": namespace})()
    if current_app is not None:
        request.current_app = current_app
    return request


def _render(engine, source, context):
    return engine.from_string(source).render(context)


def test_every_template_of_the_engine_writes_url_with_the_fixed_tag():
    node = OURS.from_string("{% url 'console:dashboard' %}").nodelist[0]
    assert isinstance(node, FixedURLNode)


@pytest.mark.parametrize("prefix", ["/", "/steward/"])
@pytest.mark.parametrize("namespace", [None, "", "eventing", "admin"])
def test_every_url_without_arguments_is_written_as_djangos_tag_writes_it(prefix, namespace):
    names = [*_names_taking(0), "console:no-such-page", "assets:asset-detail"]
    set_script_prefix(prefix)
    try:
        for name in names:
            for current_app in (None, "admin"):
                source = "{% url name %}"
                context = {"name": name}
                try:
                    expected = _render(
                        DJANGOS, source, RequestContext(_request(namespace, current_app), context)
                    )
                except NoReverseMatch:
                    for _ in range(2):  # a refusal is refused every time
                        with pytest.raises(NoReverseMatch):
                            _render(OURS, source, RequestContext(_request(namespace), context))
                    continue
                for _ in range(2):
                    got = _render(
                        OURS, source, RequestContext(_request(namespace, current_app), context)
                    )
                    assert got == expected, (name, namespace, current_app)
    finally:
        set_script_prefix("/")


def test_a_url_is_escaped_as_the_context_says_and_other_forms_are_djangos():
    set_script_prefix("/a&b/")  # a prefix with a character that HTML escapes
    try:
        for autoescape in (True, False):
            context = Context({"pk": 7}, autoescape=autoescape)
            for source in (
                "{% url 'console:dashboard' %}",
                "{% url 'console:search' as where %}[{{ where }}]",
                "{% url 'console:no-such-page' as where %}[{{ where }}]",
                "{% url 'console:tenant-detail' 'x' %}",
                "{% url 'assets:asset-detail' pk %}",
            ):
                try:
                    expected = _render(DJANGOS, source, context)
                except NoReverseMatch:
                    with pytest.raises(NoReverseMatch):
                        _render(OURS, source, context)
                    continue
                assert _render(OURS, source, context) == expected, source
            assert ("&amp;" in _render(OURS, "{% url 'console:dashboard' %}", context)) is (
                autoescape
            )
    finally:
        set_script_prefix("/")
