"""The address a request came from, the one every rate limit and log line uses.

`REMOTE_ADDR` is the peer that opened the connection. Behind a reverse proxy that is
the proxy, and the client's own address is in `X-Forwarded-For`, which each proxy
appends to. The header is believed only when the peer is one of the proxies in
`STEWARD_TRUSTED_PROXIES`, and then read from the right: each trusted hop is passed
over, and the first address no trusted proxy vouches for is the client. Anything left
of it was written by the client itself and could say anything. With no proxies
configured (the default) the header is ignored, so a client cannot choose the address
its failed sign-ins and API calls are counted under.
"""

from __future__ import annotations

import functools
import ipaddress

from django.conf import settings

_ATTRIBUTE = "steward_client_address"


@functools.lru_cache(maxsize=8)
def _trusted(listed: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(network, strict=False) for network in listed)


def _address(text: str):
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_address(request) -> str:
    """The client's address as text (remembered on the request)."""
    known = getattr(request, _ATTRIBUTE, None)
    if known is not None:
        return known
    peer = request.META.get("REMOTE_ADDR", "") or ""
    found = _from_forwarded(peer, request.META.get("HTTP_X_FORWARDED_FOR", ""))
    setattr(request, _ATTRIBUTE, found)
    return found


def _from_forwarded(peer: str, forwarded: str) -> str:
    trusted = _trusted(tuple(settings.STEWARD_TRUSTED_PROXIES))
    address = _address(peer)
    if not trusted or address is None or not forwarded:
        return peer
    client = peer
    for hop in [address, *(_address(h) for h in reversed(forwarded.split(",")))]:
        if hop is None:
            break  # not an address: nothing left of it can be read
        client = str(hop)
        if not any(hop in network for network in trusted):
            break
    return client
