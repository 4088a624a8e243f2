"""`reverse_pk` (apps.core.urls) gives `reverse()`'s answer for every URL of Steward's
that takes one argument, under any script prefix, for any key, inside a
`fixed_prefix()` block as outside one; `reverse_fixed` for every URL that takes none."""

import contextlib
import uuid

import pytest
from django.urls import NoReverseMatch, get_resolver, reverse, set_script_prefix

from apps.core.urls import fixed_prefix, reverse_fixed, reverse_pk


def _names_taking(count: int, resolver=None, namespace="") -> list[str]:
    resolver = resolver or get_resolver()
    names = [
        f"{namespace}{name}"
        for name, possibilities in resolver.reverse_dict.lists()
        if isinstance(name, str)
        and any(len(params) == count for found, *_ in possibilities for _text, params in found)
    ]
    for inner, (_prefix, sub) in resolver.namespace_dict.items():
        names += _names_taking(count, sub, f"{namespace}{inner}:")
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
    names = _names_taking(1)
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


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("prefix", ["/", "/steward/"])
def test_every_url_without_arguments_is_reversed_as_django_does(prefix, fixed):
    names = _names_taking(0)
    assert "console:dashboard" in names and "api-docs" in names and "admin:index" in names
    set_script_prefix(prefix)
    try:
        with fixed_prefix() if fixed else contextlib.nullcontext():
            for name in [*names, "console:no-such-page", "assets:asset-detail"]:
                try:
                    expected = reverse(name)
                except NoReverseMatch:
                    for _ in range(2):  # a refusal is remembered, and still refused
                        with pytest.raises(NoReverseMatch):
                            reverse_fixed(name)
                    continue
                for _ in range(2):
                    assert reverse_fixed(name) == expected, name
    finally:
        set_script_prefix("/")


def test_a_url_without_arguments_keeps_the_blocks_prefix_and_follows_it_outside():
    set_script_prefix("/one/")
    try:
        with fixed_prefix():
            assert reverse_fixed("console:dashboard") == "/one/"
            set_script_prefix("/two/")
            assert reverse_fixed("console:dashboard") == "/one/"
            # reversed for the first time while the prefix differs from the block's:
            # Django's answer, remembered for neither
            assert reverse_fixed("console:search") == "/two/search/"
        assert reverse_fixed("console:dashboard") == "/two/"
        assert reverse_fixed("console:search") == "/two/search/"
        set_script_prefix("/one/")
        assert reverse_fixed("console:search") == "/one/search/"
    finally:
        set_script_prefix("/")
