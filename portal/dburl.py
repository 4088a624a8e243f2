"""DATABASE_URL ↔ Django's database settings, both ways, in one place."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit


def settings_from_url(url: str) -> dict:
    """`postgresql://user:pass@host:port/name?host=/socket&sslmode=…` → connection fields."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ValueError("DATABASE_URL must be a postgresql:// URL.")
    options = dict(parse_qsl(parts.query))
    host = options.pop("host", None) or parts.hostname or ""
    return {
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
    }


def url_from_settings(db: dict) -> str:
    """The URL of a connection's settings, e.g. to hand the test or scratch database to a
    process a test or benchmark starts."""
    auth = quote(db["USER"]) + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    if db["HOST"].startswith("/"):
        return f"postgresql://{auth}@/{db['NAME']}?host={db['HOST']}"
    return f"postgresql://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
