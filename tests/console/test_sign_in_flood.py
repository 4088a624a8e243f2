"""A flood of wrong passwords does not starve other callers.

Against a real web process (`manage.py runserver`, as `make run` starts it, its
database connections in a pool of two), a dozen clients send wrong passwords as fast
as they are answered, for a real account and for names nobody has, while a service
calls the API. Every password is hashed at Django's full cost (a million PBKDF2
iterations), and the address limit is set out of reach so that every attempt is
hashed: the worst case for the pool.
"""

import http.client
import re
import threading
import time
from urllib.parse import urlencode

import pytest
import redis
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.factories import UserFactory, service_token
from tests.support import web_process

FLOODERS = 12
FLOOD_SECONDS = 10
# The bound on the API caller's p95 latency while the flood lasts. Unflooded, a call
# takes some 0.02 s. When each wrong password held a pooled connection while it was
# hashed (inside the login's transaction and row lock), a call waited for a connection
# behind the hashes: measured on the 2-core machine, a p95 of 1.9 s (eight calls in ten
# seconds), and in another run 503 `database_unavailable` for the flood once the pool's
# 3 s ran out. With the connection released before the hash, the caller only shares
# the CPU with the hashing threads: a p95 of 0.12 s, the slowest 0.3 s. One second
# sits between the two with room for a busy machine on either side.
P95_BOUND_SECONDS = 1.0
REDIS_DB = 7  # the server's own counters, apart from the test run's and a developer's


def request(port, method, path, *, body=None, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.getheader("Set-Cookie") or "", answer.read()
    finally:
        conn.close()


def redis_url(db: int) -> str:
    base = re.sub(r"([?&])db=\d+", "", settings.REDIS_URL).rstrip("?&")
    if base.startswith("unix://"):
        return f"{base}{'&' if '?' in base else '?'}db={db}"
    return re.sub(r"/\d*$", "", base) + f"/{db}"


@pytest.mark.django_db(transaction=True)
def test_a_flood_of_wrong_passwords_keeps_the_api_answering():
    # given a person whose password is stored at Django's full cost
    target = UserFactory(username="target")
    target.password = PBKDF2PasswordHasher().encode("the real one", "saltsaltsalt")
    target.save(update_fields=["password"])
    token = service_token(name="steady-caller").secret
    stop = threading.Event()
    flood_statuses: list[int] = []
    api_answers: list[tuple[int, float]] = []

    def flood(port: int, n: int):
        _, cookie, _ = request(port, "GET", "/login/")
        csrf = re.search(r"csrftoken=([^;]+)", cookie).group(1)
        names = ["target", f"nobody-{n}"]
        i = 0
        while not stop.is_set():
            body = urlencode(
                {"username": names[i % 2], "password": f"guess-{i}", "csrfmiddlewaretoken": csrf}
            )
            headers = {
                "Cookie": f"csrftoken={csrf}",
                "Content-Type": "application/x-www-form-urlencoded",
            }
            flood_statuses.append(request(port, "POST", "/login/", body=body, headers=headers)[0])
            i += 1

    def call_api(port: int):
        while not stop.is_set():
            started = time.perf_counter()
            status, _, _ = request(
                port,
                "GET",
                "/api/v1/tenancy/tenants/",
                headers={"Authorization": f"Bearer {token}"},
            )
            api_answers.append((status, time.perf_counter() - started))
            time.sleep(0.05)

    with web_process(
        REDIS_URL=redis_url(REDIS_DB),
        STEWARD_DB_POOL_SIZE="2",
        STEWARD_LOGIN_ADDRESS_MAX_FAILURES="100000",
        STEWARD_LOG_LEVEL="CRITICAL",
    ) as port:
        try:
            # when a dozen clients flood the login while a service calls the API
            threads = [threading.Thread(target=flood, args=(port, n)) for n in range(FLOODERS)]
            threads.append(threading.Thread(target=call_api, args=(port,)))
            for thread in threads:
                thread.start()
            time.sleep(FLOOD_SECONDS)
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        finally:
            _forget_the_servers_counters()

    # then the API answered every call, promptly, and the flood got only refusals
    assert flood_statuses, "the flood never got an answer"
    assert set(flood_statuses) <= {401, 429}, sorted(set(flood_statuses))
    statuses = [status for status, _ in api_answers]
    assert statuses and set(statuses) == {200}, statuses
    latencies = sorted(seconds for _, seconds in api_answers)
    p95 = latencies[max(int(len(latencies) * 0.95) - 1, 0)]
    assert p95 < P95_BOUND_SECONDS, (p95, latencies)


def _forget_the_servers_counters():
    server_redis = redis.Redis.from_url(redis_url(REDIS_DB))
    try:
        stale = list(server_redis.scan_iter(match="steward:signin:*"))
        if stale:
            server_redis.delete(*stale)
    finally:
        server_redis.close()
