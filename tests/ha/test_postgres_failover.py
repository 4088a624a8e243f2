"""PostgreSQL failover: DATABASE_URL names the primary and its standby as libpq does, with
target_session_attrs=read-write; while no server takes writes a request answers 503 with
Retry-After (never 500), and once the standby is promoted Steward carries on there."""

import http.client
import json

import pytest
from django.db import connection

from portal.dburl import settings_from_url, url_from_settings
from tests.factories import service_token
from tests.support import wait_for, web_process


@pytest.mark.parametrize(
    ("url", "host", "port"),
    [
        ("postgresql://u:p@h1:5433,h2:5434/steward", "h1,h2", "5433,5434"),
        ("postgresql://u:p@h1,h2/steward", "h1,h2", ""),
        ("postgresql://u:p@h1:5433,h2/steward", "h1,h2", "5433,5432"),
        ("postgresql://u:p@[::1]:5433,h2:5434/steward", "::1,h2", "5433,5434"),
        ("postgresql://u:p@db.example:6432/steward", "db.example", "6432"),
        ("postgresql://u@/steward?host=/run/postgresql", "/run/postgresql", ""),
    ],
)
def test_a_url_naming_several_servers_gives_libpq_its_host_and_port_lists(url, host, port):
    found = settings_from_url(f"{url}{'&' if '?' in url else '?'}target_session_attrs=read-write")
    assert (found["HOST"], found["PORT"]) == (host, port)
    assert found["OPTIONS"] == {"target_session_attrs": "read-write"}
    assert found["NAME"] == "steward"


def test_a_url_handed_on_names_the_same_servers_and_how_to_choose():
    url = "postgresql://u:p%40ss@h1:5433,h2:5434/steward?target_session_attrs=read-write"
    assert url_from_settings(settings_from_url(url)) == url


def test_a_server_address_that_is_not_host_port_is_refused():
    with pytest.raises(ValueError, match="DATABASE_URL"):
        settings_from_url("postgresql://u@h1:5433,h2:x/steward")


def _get(port: int, path: str, headers: dict) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        answer = conn.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        conn.close()


@pytest.mark.django_db(transaction=True)
def test_requests_during_a_failover_answer_503_and_then_reach_the_promoted_standby(request):
    token = service_token(name="failover-probe", scopes=["registry:read"]).secret
    pair = request.getfixturevalue("postgres_pair")  # copied with the token in it
    auth = {"Authorization": f"Bearer {token}"}
    db = connection.settings_dict
    # The standby first: read-write passes it over for the primary.
    url = pair.url("standby", "primary", name=db["NAME"], user=db["USER"])
    topics = "/api/v1/registry/topics/"
    with web_process(
        DATABASE_URL=url, STEWARD_DB_POOL_TIMEOUT="2", STEWARD_LOG_LEVEL="CRITICAL"
    ) as port:
        assert _get(port, topics, auth)[0] == 200

        pair.crash("primary")
        status, headers, body = _get(port, topics, auth)
        assert status == 503, body
        assert json.loads(body)["code"] == "database_unavailable"
        assert int(headers["Retry-After"]) > 0

        with pair.admin("standby") as standby:
            standby.execute("SELECT pg_promote(wait => true)")
        answers = []

        def answered() -> bool:
            answers.append(_get(port, topics, auth)[0])
            return answers[-1] == 200

        wait_for(answered, timeout=60)
        assert set(answers) <= {200, 503}, answers  # never a 500 on the way
