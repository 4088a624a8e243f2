"""Health checks of Steward's containers (the image's HEALTHCHECK, docker-compose.yml).

They run every few seconds in every container, so they stay cheap: the standard
library, psycopg and redis-py, never Django's start-up.

    python deploy/healthcheck.py http /readyz   web: the probe answers 200
    python deploy/healthcheck.py beat           beat: schedules are being sent
    python deploy/healthcheck.py consumers      consumers: runner threads are at work

Exit status 0 when healthy, 1 otherwise, with one line saying why (Docker keeps it in
`docker inspect`'s health log).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

WEB = "http://127.0.0.1:8000"
# django-celery-beat writes the schedules it sent back to PostgreSQL every three
# minutes (its sync interval), and Steward's own run every few seconds, so a beat that
# ticks has written within five.
BEAT_STALE_SECONDS = 300
# Every runner thread of run_consumers, holding its group or standing by, renews its
# lease (a script) or reads its streams (XREADGROUP, blocking at most a second) every
# second; nothing else in that container asks Redis this.
RUNNER_COMMANDS = {"eval", "evalsha", "xreadgroup"}
CONSUMERS_IDLE_SECONDS = 30
TIMEOUT_SECONDS = 5


class Unhealthy(Exception):
    pass


def probe_headers(environ) -> dict[str, str]:
    """The check asks gunicorn directly, standing where the proxy stands: a Host that
    STEWARD_ALLOWED_HOSTS allows, and the proxy's X-Forwarded-Proto, without which
    production answers every plain-HTTP request with a redirect."""
    hosts = [h.strip() for h in environ.get("STEWARD_ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = hosts[0].lstrip(".") if hosts else "localhost"
    if host == "*":
        host = "localhost"
    return {"Host": host, "X-Forwarded-Proto": "https"}


def check_http(path: str, environ=os.environ, base: str = WEB) -> str:
    # An http:// URL of our own making, never a caller's.
    request = urllib.request.Request(base + path, headers=probe_headers(environ))  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310
            return f"{path}: {answer.status}"
    except urllib.error.HTTPError as exc:
        raise Unhealthy(f"{path}: {exc.code} {exc.read(300).decode(errors='replace')}") from None
    except OSError as exc:
        raise Unhealthy(f"{path}: {exc}") from None


def _database(environ):
    import psycopg

    try:
        return psycopg.connect(environ["DATABASE_URL"], connect_timeout=TIMEOUT_SECONDS)
    except psycopg.Error as exc:
        raise Unhealthy(f"database: {exc}".strip()) from None


def check_beat(environ=os.environ) -> str:
    with _database(environ) as connection:
        row = connection.execute(
            "SELECT extract(epoch FROM now() - max(last_run_at)) "
            "FROM django_celery_beat_periodictask WHERE enabled"
        ).fetchone()
    age = row[0]
    if age is None or age > BEAT_STALE_SECONDS:
        seen = "never" if age is None else f"{int(age)} s ago"
        raise Unhealthy(f"beat: no schedule sent in {BEAT_STALE_SECONDS} s (last {seen})")
    return f"beat: a schedule sent {int(age)} s ago"


def check_reach(environ=os.environ) -> str:
    import redis

    with _database(environ) as connection:
        connection.execute("SELECT 1")
    url = environ["REDIS_URL"]
    client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_SECONDS)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise Unhealthy(f"redis: {exc}") from None
    finally:
        client.close()
    return "reach: PostgreSQL and Redis answer"


def _host(address: str) -> str:
    return address.rsplit(":", 1)[0]


def check_consumers(environ=os.environ) -> str:
    """A connection of this container's to REDIS_URL's database, other than the check's
    own, sent Redis a runner's command within CONSUMERS_IDLE_SECONDS: the runners are not
    stuck or gone."""
    import redis

    check_reach(environ)
    client = redis.Redis.from_url(environ["REDIS_URL"], socket_timeout=TIMEOUT_SECONDS)
    try:
        own_id = client.client_id()
        clients = client.client_list()
    except redis.RedisError as exc:
        raise Unhealthy(f"redis: {exc}") from None
    finally:
        client.close()
    own = next(c for c in clients if int(c["id"]) == own_id)
    # This container's runners, on REDIS_URL's database: another stack sharing the
    # server (another database) is not this one at work.
    host, db = _host(own["addr"]), own["db"]
    working = [
        c
        for c in clients
        if int(c["id"]) != own_id
        and _host(c["addr"]) == host
        and c["db"] == db
        and c["cmd"] in RUNNER_COMMANDS
        and int(c["idle"]) <= CONSUMERS_IDLE_SECONDS
    ]
    if not working:
        raise Unhealthy(f"consumers: no runner asked Redis in {CONSUMERS_IDLE_SECONDS} s")
    return f"consumers: {len(working)} runner connection(s) at work"


def main(argv: list[str]) -> int:
    checks = {
        "http": lambda: check_http(argv[1] if len(argv) > 1 else "/healthz"),
        "beat": check_beat,
        "consumers": check_consumers,
    }
    if not argv or argv[0] not in checks:
        print(f"usage: healthcheck.py {{{'|'.join(checks)}}} [path]", file=sys.stderr)
        return 2
    try:
        print(checks[argv[0]]())
    except Unhealthy as exc:
        print(exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
