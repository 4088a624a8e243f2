"""Only for tests/api_fuzz/test_schema_fuzz.py, until it imports order_request and
owner_task_issue from apps.governance.orders.services: delete then."""

from apps.governance.orders.services import order_request
from apps.governance.orders.services import owner_task_issue as task_issue

__all__ = ["order_request", "task_issue"]
