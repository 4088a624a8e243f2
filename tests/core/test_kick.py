"""A process collapses its own burst of kicks, and every kick is still followed by one."""

import time
import uuid

import pytest

from apps.core import kick as kicks
from tests.support import wait_for


class Task:
    name = "tests.task"


@pytest.fixture
def sent(monkeypatch):
    sent: list = []
    monkeypatch.setattr(
        kicks, "_send", lambda task, key, **kwargs: sent.append((key, time.monotonic()))
    )
    return sent


def a_key() -> str:
    return f"test:kick:{uuid.uuid4().hex}"


def test_a_burst_sends_one_kick_at_once_and_one_when_the_time_is_up(sent):
    # given
    key = a_key()
    started = time.monotonic()
    # when
    for _ in range(50):
        kicks.kick(Task, key, coalesce_ms=200)
    # then
    assert [k for k, _ in sent] == [key]
    wait_for(lambda: len(sent) == 2, timeout=5)
    assert sent[1][1] - started >= 0.19
    time.sleep(0.3)
    assert len(sent) == 2  # nothing more was owed


def test_a_kick_after_a_quiet_spell_goes_at_once(sent):
    key = a_key()
    kicks.kick(Task, key, coalesce_ms=50)
    time.sleep(0.1)
    kicks.kick(Task, key, coalesce_ms=50)
    assert len(sent) == 2


def test_each_key_is_collapsed_on_its_own(sent):
    first, second = a_key(), a_key()
    for _ in range(3):
        kicks.kick(Task, first, coalesce_ms=100)
        kicks.kick(Task, second, coalesce_ms=100)
    assert [k for k, _ in sent] == [first, second]
    wait_for(lambda: len(sent) == 4, timeout=5)
    assert sorted(k for k, _ in sent[2:]) == sorted([first, second])


def test_kicks_still_due_are_sent_when_the_process_stops(sent):
    key = a_key()
    kicks.kick(Task, key, coalesce_ms=60_000)
    kicks.kick(Task, key, coalesce_ms=60_000)
    kicks._coalescer.flush()
    assert [k for k, _ in sent] == [key, key]


def test_without_coalescing_every_kick_asks_redis(sent):
    key = a_key()
    for _ in range(3):
        kicks.kick(Task, key)
    assert len(sent) == 3
