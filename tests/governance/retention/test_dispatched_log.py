"""The dispatched log (apps.eventing.redrive) is one of Steward's own tables: set-up
installs its rule from the inbox window, and the sweep expires what is past it."""

import uuid
from datetime import timedelta

import pytest

from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DispatchedEvent
from apps.governance.retention import services
from tests.governance.factories import NIGHT

pytestmark = pytest.mark.django_db


def logged(tenant, hours_old, n, start=0):
    with tenant_scope(tenant):
        DispatchedEvent.objects.bulk_create(
            DispatchedEvent(
                id=start + i,
                lane=i % 16,
                dispatched_at=NIGHT - timedelta(hours=hours_old),
                event_id=uuid.uuid4(),
                topic="t",
                event_type="E",
                schema_version=1,
                tenant=tenant,
                aggregate_type="a",
                aggregate_id=str(i),
                occurred_at=NIGHT - timedelta(hours=hours_old),
                correlation_id="c",
                payload={"i": i},
            )
            for i in range(n)
        )


def test_the_log_has_a_default_rule_of_the_inbox_window_and_is_swept_by_it(
    own_rules, tenant_a, tenant_b, settings
):
    rule = own_rules["steward-dispatched-events"]
    assert rule.period_days * 24 == settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    window = rule.period_days * 24
    logged(tenant_a, window + 1, 5)
    logged(tenant_b, window + 2, 3, start=100)
    logged(tenant_a, window - 1, 4, start=200)  # inside the window: kept for a re-drive

    sweep = services.sweep_run(now=NIGHT)

    table = sweep.results["tables"]["eventing.DispatchedEvent"]
    assert (table["rows"], table["rule"]) == (8, "steward-dispatched-events"), table
    with system_scope():
        assert sorted(DispatchedEvent.objects.values_list("id", flat=True)) == [
            200,
            201,
            202,
            203,
        ]
