"""Only for tests/api_fuzz/test_schema_fuzz.py, until it imports
apps.governance.retention.services: delete then."""

from apps.governance.retention.services import hold_place, rule_create, sweep_run

__all__ = ["hold_place", "rule_create", "sweep_run"]
