"""The cluster drill's own pieces (bench/cluster.py): the verdict on the answers the
traffic saw, the round-robin balancer, the nodes' network namespaces, and the choice of
transport and Celery's broker with the RabbitMQ fault. The servers
it starts are tested in tests/ha; the drill's consistency checks in test_chaos.py."""

import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import httpx
import pytest

from bench.cluster import (
    NOT_COVERED,
    TRANSPORTS,
    RoundRobin,
    Servers,
    answers_verdict,
    fault_plan,
    main,
    parse_options,
)
from bench.cluster_stack import Network
from portal.rabbitmq import RabbitNode
from tests.support import LocalServer


def test_answers_503_with_retry_after_and_lost_connections_pass():
    seen = Counter({"200": 90, "201": 10, "503": 4, "ConnectError": 2, "RemoteProtocolError": 1})
    verdict = answers_verdict(seen, without_retry_after=0)
    assert verdict["ok"]
    assert verdict["statuses"]["503"] == 4
    assert verdict["server_errors"] == {}


@pytest.mark.parametrize("status", ["500", "502", "504"])
def test_any_5xx_but_503_fails_the_drill(status):
    verdict = answers_verdict(Counter({"200": 50, status: 1}), without_retry_after=0)
    assert not verdict["ok"]
    assert verdict["server_errors"] == {status: 1}


def test_a_503_without_retry_after_fails_the_drill():
    verdict = answers_verdict(Counter({"200": 5, "503": 1}), without_retry_after=1)
    assert not verdict["ok"]
    assert verdict["503_without_retry_after"] == 1


def test_the_balancer_sends_requests_to_each_node_in_turn_and_counts_every_answer():
    with (
        LocalServer(respond=lambda got: (200, {"node": 1})) as one,
        LocalServer(respond=lambda got: (503, {"node": 2})) as two,
    ):
        balancer = RoundRobin(
            {
                "one": ("127.0.0.1", one.server.server_address[1]),
                "two": ("127.0.0.1", two.server.server_address[1]),
            }
        )
        client = httpx.Client(base_url="http://web", transport=balancer)
        answers = [client.get("/x").json()["node"] for _ in range(4)]
    assert answers == [1, 2, 1, 2]
    assert (len(one.received), len(two.received)) == (2, 2)
    assert balancer.statuses == Counter({"200": 2, "503": 2})
    assert balancer.without_retry_after == 2  # the stand-in's 503s carry no Retry-After
    assert balancer.in_flight == Counter({"one": 0, "two": 0})


def test_a_node_that_is_gone_is_counted_and_the_next_request_goes_to_the_other():
    with LocalServer(respond=lambda got: (200, {})) as alive:
        gone = LocalServer()  # bound, never serving: then closed, so its port refuses
        gone_port = gone.server.server_address[1]
        gone.server.server_close()
        balancer = RoundRobin(
            {
                "gone": ("127.0.0.1", gone_port),
                "alive": ("127.0.0.1", alive.server.server_address[1]),
            }
        )
        client = httpx.Client(base_url="http://web", transport=balancer)
        with pytest.raises(httpx.ConnectError):
            client.get("/x")
        assert client.get("/x").status_code == 200
    assert balancer.statuses == Counter({"ConnectError": 1, "200": 1})


def test_a_node_in_its_namespace_reaches_a_server_on_the_host_end_of_the_bridge():
    network = Network(["probe"]).create()
    if not network.isolated:
        pytest.fail(f"network namespaces could not be made: {network.why_not}", pytrace=False)
    try:
        assert network.address["probe"] != network.host
        with LocalServer(respond=lambda got: (200, {"from": "host"}), host=network.host) as host:
            fetch = f"import urllib.request; print(urllib.request.urlopen('{host.url}/').read())"
            inside = subprocess.run(
                [*network.prefix("probe"), sys.executable, "-c", fetch],
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
            assert '"from": "host"' in inside.stdout
    finally:
        network.remove()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert network.namespaces["probe"] not in listed


def test_the_drill_runs_over_rabbitmq_unless_told_otherwise_and_refuses_other_transports(capsys):
    assert main(["--transport", "kafka"]) == 2
    assert main(["--quick"]) == 2
    assert (
        "usage: python -m bench cluster [--transport amqp|redis_stream]" in capsys.readouterr().out
    )
    assert TRANSPORTS[0] == "amqp"
    assert NOT_COVERED["redis_stream"][0].startswith("RabbitMQ")
    assert not any("RabbitMQ" in item for item in NOT_COVERED["amqp"])


@pytest.mark.parametrize("transport", ["amqp", "redis_stream"])
def test_restarting_rabbitmq_is_the_last_fault_when_it_carries_the_events(tmp_path, transport):
    servers = Servers(tmp_path, Network(["web-1"]), transport)
    if transport == "amqp":
        servers.rabbit = RabbitNode(tmp_path / "rabbitmq")  # made, not started
    stack = SimpleNamespace(servers=servers, processes=None)
    names = [names[0] for names, _ in fault_plan(stack, RoundRobin({}))]
    assert names[:2] == ["SIGKILL web-1 mid-request", "SIGKILL worker-1"]
    if transport == "amqp":
        assert names[-1] == "restart RabbitMQ (SIGKILL, start on its data)"
        assert servers.event_settings() == {
            "STEWARD_EVENT_TRANSPORT": "amqp",
            "STEWARD_AMQP_URL": servers.rabbit.url,
        }
    else:
        assert len(names) == 4 and not any("RabbitMQ" in name for name in names)
        assert servers.event_settings() == {"STEWARD_EVENT_TRANSPORT": "redis_stream"}


def test_celery_can_run_on_the_drills_rabbitmq_whose_restart_then_hits_the_workers(tmp_path):
    # given: events on Redis streams, Celery's tasks on RabbitMQ
    options = parse_options(["--transport", "redis_stream", "--celery-broker", "rabbitmq"])
    assert options == {"transport": "redis_stream", "celery_broker": "rabbitmq"}
    servers = Servers(tmp_path, Network(["web-1"]), **options)
    servers.rabbit = RabbitNode(tmp_path / "rabbitmq")  # made, not started
    stack = SimpleNamespace(servers=servers, processes=None)
    # then: the nodes' Celery goes to the node, the events stay on Redis, and the node's
    # SIGKILL is the last fault
    assert servers.event_settings() == {
        "STEWARD_EVENT_TRANSPORT": "redis_stream",
        "STEWARD_CELERY_BROKER_URL": servers.rabbit.url,
    }
    names = [names[0] for names, _ in fault_plan(stack, RoundRobin({}))]
    assert names[-1] == "restart RabbitMQ (SIGKILL, start on its data)"
    # and by default Celery stays on Redis; an unknown broker is refused
    assert parse_options([]) == {"transport": "amqp", "celery_broker": "redis"}
    assert parse_options(["--celery-broker", "kafka"]) is None
    assert parse_options(["--celery-broker"]) is None
