import pytest

from tests.assets.fakes import FakeWorkflowService, served


@pytest.fixture
def workflow_service(settings):
    """A local Workflow Service that Steward's client talks to over HTTP, no retries."""
    with served(FakeWorkflowService(), settings) as both:
        yield both
