"""`reverse_pk` (apps.core.urls) gives `reverse()`'s answer for every URL of Steward's
that takes one argument, under any script prefix, for any key."""

import uuid

import pytest
from django.urls import NoReverseMatch, get_resolver, reverse, set_script_prefix

from apps.core.urls import reverse_pk


def _one_argument_names(resolver=None, namespace="") -> list[str]:
    resolver = resolver or get_resolver()
    names = [
        f"{namespace}{name}"
        for name, possibilities in resolver.reverse_dict.lists()
        if isinstance(name, str)
        and any(len(params) == 1 for found, *_ in possibilities for _text, params in found)
    ]
    for inner, (_prefix, sub) in resolver.namespace_dict.items():
        names += _one_argument_names(sub, f"{namespace}{inner}:")
    return sorted(set(names))


def _same_as_reverse(name, key):
    try:
        expected = reverse(name, args=[key])
    except NoReverseMatch:
        with pytest.raises(NoReverseMatch):
            reverse_pk(name, key)
        return
    assert reverse_pk(name, key) == expected, (name, key)


@pytest.mark.parametrize("prefix", ["/", "/steward/"])
def test_every_one_argument_url_is_reversed_as_django_does(prefix):
    names = _one_argument_names()
    assert "assets:asset-detail" in names and "eventing:dead-letter-replay" in names
    keys = [uuid.uuid4(), uuid.UUID(int=0), 7, 0, 10**18, "text", "a/b", True]
    set_script_prefix(prefix)
    try:
        for name in names:
            for key in keys:
                _same_as_reverse(name, key)
    finally:
        set_script_prefix("/")
