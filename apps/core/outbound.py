"""Requests Steward makes to addresses others chose (webhook endpoints): never to the
platform's own network.

A platform service names the URL its events are POSTed to. Left unchecked, that is a
way to make Steward call what only Steward can reach: a cloud's metadata service
(169.254.169.254, fd00:ec2::254, metadata.google.internal), the database, Redis, an
admin port on loopback. So an endpoint is checked twice:

- when it is written, and before each delivery (`check_url`): its form (http or https,
  no user:password@, not a metadata name nor localhost, not a refused address);
- when Steward connects (`guarded_client`): the name is resolved again, every address
  checked, and the connection made to a checked address, never to the name (whose
  answer may have changed since, as DNS rebinding makes it).

An address is allowed when it is global unicast (not private, loopback, link-local,
unique-local, shared, reserved, unspecified or multicast), or when it is in a range an
operator listed in STEWARD_WEBHOOK_ALLOWED_NETWORKS (a receiver on a private network;
the tests' receivers on loopback).
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings

# Names of cloud metadata services, refused whatever they resolve to (some resolve only
# inside the cloud, where the check at connect time would see the link-local address).
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "metadata.packet.net",
        "metadata.tencentyun.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)


class OutboundRefused(Exception):
    """The URL or an address its name resolves to is not one Steward calls."""


@lru_cache(maxsize=8)
def _allowed(listed: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in listed if cidr)


def allowed_networks() -> tuple:
    return _allowed(tuple(settings.STEWARD_WEBHOOK_ALLOWED_NETWORKS))


def check_address(address: str) -> None:
    """Refuse an address that is not global unicast, unless an operator allowed its range."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone is no address
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    if any(ip.version == net.version and ip in net for net in allowed_networks()):
        return
    if not ip.is_global or ip.is_multicast:
        raise OutboundRefused(f"{ip} is not a public address")


def resolve(host: str, port: int) -> list[str]:
    """Every address the name resolves to, each checked: one refused address refuses the
    name (which of them a connection would use is not ours to pick)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundRefused(f"{host} does not resolve") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in found))
    for address in addresses:
        check_address(address)
    return addresses


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def check_url(url: str) -> None:
    """Refuse a URL Steward must not call, by its form: not http(s), with credentials in
    it, naming a metadata service or localhost, or an address that is not allowed.

    A name is not resolved here: whether Steward's resolver knows an internal name would
    be told to whoever writes URLs (a map of the private network, one name at a time).
    Every name is resolved and checked when Steward connects (`guarded_client`), and a
    refusal there reads like any refused connection."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not one
    except ValueError as exc:
        raise OutboundRefused("the URL is malformed") from exc
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused("only http and https URLs are called")
    if "@" in parts.netloc:
        raise OutboundRefused("a URL with user:password@ is not called")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundRefused("the URL names no host")
    if host in METADATA_NAMES or host == "localhost" or host.endswith(".localhost"):
        raise OutboundRefused(f"{host} is not called")
    if _is_address(host):
        check_address(host)


class _CheckedBackend(httpcore.SyncBackend):
    """Connects to an address the name resolved to and the check allowed, not to the
    name: what was checked is what is called."""

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if host.rstrip(".").lower() in METADATA_NAMES:
            raise httpcore.ConnectError(f"{host} is not called")
        try:
            addresses = resolve(host, port)
        except OutboundRefused as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        error = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"{host} has no address")


class _CheckedTransport(httpx.HTTPTransport):
    def __init__(self):
        super().__init__(trust_env=False)
        # httpx takes no network backend of its own: the pool it built is replaced by one
        # that connects through the check (TLS still verifies the URL's name: httpcore
        # gives it as the server name, whatever address the socket went to).
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            network_backend=_CheckedBackend(),
        )


def guarded_client(*, timeout: float) -> httpx.Client:
    """An HTTP client that calls only addresses the check allows, follows no redirect
    (a redirect is a URL the check never saw) and uses no proxy from the environment."""
    return httpx.Client(
        timeout=timeout, follow_redirects=False, transport=_CheckedTransport(), trust_env=False
    )
