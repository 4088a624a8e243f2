import pytest

from tests.assets.fakes import FakeWorkflowService
from tests.support import LocalServer


@pytest.fixture
def workflow_service(settings):
    """A local Workflow Service that Steward's client talks to over HTTP, no retries."""
    service = FakeWorkflowService()
    with LocalServer(respond=service) as server:
        settings.STEWARD_WORKFLOW_SERVICE_URL = server.url
        settings.STEWARD_WORKFLOW_RETRIES = 0
        yield server, service
