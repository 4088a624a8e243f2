"""A stand-in for the external Workflow Service, served by tests.support.LocalServer."""

import json
import uuid
from contextlib import contextmanager

from tests.support import LocalServer


class FakeWorkflowService:
    """Starts one instance per idempotency key, as a real one must."""

    def __init__(self):
        self.instances = {}
        # Starts to lose on the way in (as a network would): nothing is started for them.
        self.lose_starts = 0
        self.start_keys = []

    def __call__(self, received):
        if received.method == "POST":
            key = json.loads(received.body)["idempotency_key"]
            assert received.headers["idempotency-key"] == key
            self.start_keys.append(key)
            if self.lose_starts:
                self.lose_starts -= 1
                return 504, {}
            self.instances.setdefault(key, str(uuid.uuid4()))
            return 201, {"instance_id": self.instances[key]}
        key = received.path.split("idempotency_key=")[-1]
        return (200, {"instance_id": self.instances[key]}) if key in self.instances else (404, {})


class StatefulWorkflowService(FakeWorkflowService):
    """Also answers what became of an instance: `states[instance id]` as the service
    reports it; an instance it was not told about is unknown (404)."""

    def __init__(self):
        super().__init__()
        self.states = {}

    def __call__(self, received):
        if received.method == "GET" and "idempotency_key=" not in received.path:
            instance = received.path.rstrip("/").rsplit("/", 1)[-1]
            return (200, self.states[instance]) if instance in self.states else (404, {})
        return super().__call__(received)


class RefusingWorkflowService(FakeWorkflowService):
    """Refuses starts (a 4xx) while `refusing`, else starts one instance per key."""

    def __init__(self, status=422):
        super().__init__()
        self.refusing, self.status = True, status

    def __call__(self, received):
        if received.method == "POST" and self.refusing:
            return self.status, {"error": "no definition asset-approval for this tenant"}
        return super().__call__(received)


@contextmanager
def served(service, settings):
    """`service` over real HTTP, as Steward's client is configured to reach it (no
    retries, so a test sees each answer); (server, service)."""
    with LocalServer(respond=service) as server:
        settings.STEWARD_WORKFLOW_SERVICE_URL = server.url
        settings.STEWARD_WORKFLOW_RETRIES = 0
        yield server, service
