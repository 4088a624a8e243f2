"""DATABASE_URL ↔ Django's database settings, both ways, in one place.

A URL may name several servers, as libpq does (`postgresql://h1:5432,h2:5432/steward
?target_session_attrs=read-write`): the driver tries them in turn and keeps the first
that has what `target_session_attrs` asks, so after a failover new connections find
the promoted server. Django passes the lists on as they are (HOST "h1,h2", PORT
"5432,5432").
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit

DEFAULT_PORT = "5432"


def _host_and_port(address: str) -> tuple[str, str]:
    if address.startswith("["):  # [IPv6]:port
        host, _, rest = address[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = address.partition(":")
    if port and not port.isdigit():
        raise ValueError(f"DATABASE_URL: {address!r} is not host:port.")
    return unquote(host), port


def _servers(netloc: str) -> tuple[str, str]:
    """HOST and PORT for the URL's servers: one each, or libpq's comma-separated lists."""
    addresses = [_host_and_port(a) for a in netloc.split(",")] if netloc else []
    if len(addresses) <= 1:
        return addresses[0] if addresses else ("", "")
    hosts = ",".join(host for host, _ in addresses)
    if not any(port for _, port in addresses):
        return hosts, ""
    return hosts, ",".join(port or DEFAULT_PORT for _, port in addresses)


def settings_from_url(url: str) -> dict:
    """`postgresql://user:pass@host:port[,host:port…]/name?host=/socket&sslmode=…` →
    connection fields."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ValueError("DATABASE_URL must be a postgresql:// URL.")
    userinfo, _, netloc = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    host, port = _servers(netloc)
    options = dict(parse_qsl(parts.query))
    return {
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(user),
        "PASSWORD": unquote(password),
        "HOST": options.pop("host", None) or host,
        "PORT": options.pop("port", None) or port,
        "OPTIONS": options,
    }


def url_from_settings(db: dict) -> str:
    """The URL of a connection's settings, e.g. to hand the test or scratch database to a
    process a test or benchmark starts."""
    auth = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    if db["HOST"].startswith("/"):
        return f"postgresql://{auth}@/{db['NAME']}?host={db['HOST']}"
    hosts, ports = db["HOST"].split(","), (db["PORT"] or DEFAULT_PORT).split(",")
    ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)
    servers = ",".join(
        f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in zip(hosts, ports, strict=True)
    )
    query = "&".join(
        f"{k}={quote(str(v))}" for k, v in db.get("OPTIONS", {}).items() if k in LIBPQ_KEPT
    )
    return f"postgresql://{auth}@{servers}/{db['NAME']}" + (f"?{query}" if query else "")


# Options a URL handed on keeps: what a multi-server URL needs to pick its server.
LIBPQ_KEPT = {"target_session_attrs", "connect_timeout", "sslmode"}
