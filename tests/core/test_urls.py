"""`reverse_pk` (apps.core.urls) gives `reverse()`'s answer for every URL of Steward's
that takes one argument, under any script prefix, for any key, inside a
`fixed_prefix()` block as outside one."""

import contextlib
import uuid

import pytest
from django.urls import NoReverseMatch, get_resolver, reverse, set_script_prefix

from apps.core.urls import fixed_prefix, reverse_pk


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


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("prefix", ["/", "/steward/"])
def test_every_one_argument_url_is_reversed_as_django_does(prefix, fixed):
    names = _one_argument_names()
    assert "assets:asset-detail" in names and "eventing:dead-letter-replay" in names
    keys = [uuid.uuid4(), uuid.UUID(int=0), 7, 0, 10**18, "text", "a/b", True]
    set_script_prefix(prefix)
    try:
        with fixed_prefix() if fixed else contextlib.nullcontext():
            for name in names:
                for key in keys:
                    _same_as_reverse(name, key)
    finally:
        set_script_prefix("/")


def test_a_fixed_prefix_is_the_one_on_entry_and_ends_with_its_block():
    """Inside the block the prefix is read once, as it was on entry (a page's rows
    change neither); after it, each call reads the prefix again."""
    key = uuid.uuid4()
    set_script_prefix("/one/")
    try:
        with fixed_prefix():
            assert reverse_pk("assets:asset-detail", key) == reverse(
                "assets:asset-detail", args=[key]
            )
            set_script_prefix("/two/")
            assert reverse_pk("assets:asset-detail", key).startswith("/one/")
        assert reverse_pk("assets:asset-detail", key) == reverse("assets:asset-detail", args=[key])
        assert reverse_pk("assets:asset-detail", key).startswith("/two/")
    finally:
        set_script_prefix("/")
