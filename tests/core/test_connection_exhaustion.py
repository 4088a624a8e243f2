"""More concurrent requests than a web process's pool holds: its connections stay
bounded by the pool, a request that gets none answers 503 `database_unavailable` with
Retry-After (never 500), and readiness comes back as soon as connections free up.

The server is `manage.py runserver`, as `make run` starts it: a thread per request,
the way that once opened a connection per thread until PostgreSQL had no slots left."""

import http.client
import json
import threading

import psycopg
import pytest

from tests.factories import service_token
from tests.support import database_url, wait_for, web_process

POOL = 2
APP_NAME = "steward-pool-test"


def get(port, path, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", path, headers=headers or {})
    answer = conn.getresponse()
    return answer.status, dict(answer.getheaders()), answer.read()


def server_connections(admin) -> int:
    return admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
    ).fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_pooled_web_process_is_bounded_answers_503_and_recovers():
    token = service_token(name="pool-probe", scopes=["registry:read"]).secret
    auth = {"Authorization": f"Bearer {token}"}
    with web_process(
        STEWARD_DB_POOL_SIZE=str(POOL),
        STEWARD_DB_POOL_TIMEOUT="1",
        PGAPPNAME=APP_NAME,  # libpq names the server's connections, to count them
        STEWARD_LOG_LEVEL="CRITICAL",
    ) as port:
        _exhaust_and_recover(port, auth)


def _exhaust_and_recover(port: int, auth: dict) -> None:
    admin = psycopg.connect(database_url(), autocommit=True)
    locker = psycopg.connect(database_url())
    try:
        # Every request for the topics now waits on this lock, holding its connection.
        locker.execute("LOCK TABLE registry_topic IN ACCESS EXCLUSIVE MODE")
        answers, peak = [], [0]

        def ask():
            answers.append(get(port, "/api/v1/registry/topics/", auth))

        askers = [threading.Thread(target=ask) for _ in range(3 * POOL)]
        for asker in askers:
            asker.start()
        # Those that got no connection give up after the pool's timeout.
        wait_for(lambda: len(answers) >= 2 * POOL, timeout=20)
        peak[0] = server_connections(admin)
        refused = [a for a in answers if a[0] == 503]
        assert len(refused) == 2 * POOL, [a[0] for a in answers]
        for status, headers, body in refused:
            problem = json.loads(body)
            assert problem["code"] == "database_unavailable", problem
            assert headers["Content-Type"] == "application/problem+json"
            assert int(headers["Retry-After"]) > 0
        assert peak[0] <= POOL
        status, _, _ = get(port, "/readyz", timeout=10)
        assert status == 503  # no connection to check the database with
        locker.rollback()  # the held requests go on
        for asker in askers:
            asker.join(timeout=30)
        assert sorted(a[0] for a in answers) == [200] * POOL + [503] * (2 * POOL)
        # Ready again as soon as the connections are back in the pool.
        assert get(port, "/readyz", timeout=5)[0] == 200
        assert server_connections(admin) <= POOL
    finally:
        locker.close()
        admin.close()


def test_only_a_database_out_of_reach_is_unavailable():
    from django.db import InternalError as DjangoInternalError
    from django.db import OperationalError
    from psycopg import errors
    from psycopg_pool import PoolTimeout

    from apps.core.views import database_unavailable

    waited = OperationalError("couldn't get a connection")
    waited.__cause__ = PoolTimeout("couldn't get a connection after 1.00 sec")
    assert database_unavailable(waited)
    assert database_unavailable(errors.TooManyConnections("too many clients already"))
    assert database_unavailable(errors.AdminShutdown("terminating connection"))
    assert database_unavailable(psycopg.OperationalError("server closed the connection"))
    # psycopg's own, as a COMMIT through PgBouncer met the primary's crash (the cluster
    # drill saw it answer 500), and a connection already closed
    broken = DjangoInternalError("received 2 results from command 'COMMIT'")
    broken.__cause__ = psycopg.InternalError("received 2 results from command 'COMMIT'")
    assert database_unavailable(broken)
    assert database_unavailable(psycopg.InterfaceError("the connection is closed"))
    # a query that failed is the request's problem, not the database's absence
    assert not database_unavailable(errors.SerializationFailure("could not serialize"))
    assert not database_unavailable(errors.QueryCanceled("statement timeout"))
    assert not database_unavailable(errors.InternalError_("the server's own internal error"))
    assert not database_unavailable(ValueError("no"))
