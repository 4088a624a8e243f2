"""Open work never expires: a row an attention item (or a worker) still needs is skipped
by the retention sweep and its preview, however old, while the rest of its table is
swept as its rule says."""

import uuid
from datetime import timedelta

import pytest

from apps.assets import selectors as asset_selectors
from apps.assets import services as assets
from apps.assets.models import WorkflowCallback
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import owner_scope, system_scope
from apps.governance.retention import selectors, services, sweeper
from apps.tenancy.models import DataClass
from tests.assets.factories import delegated
from tests.governance.factories import NIGHT

pytestmark = pytest.mark.django_db
RECEIPTS = "assets.WorkflowCallback"


def received(instance, *, days_old, approve=True):
    receipt = assets.callback_receive(
        workflow_instance_id=instance, approve=approve, reason="", callback_id="cb"
    )
    with owner_scope(receipt.tenant_id):
        WorkflowCallback.objects.filter(pk=receipt.id).update(
            received_at=NIGHT - timedelta(days=days_old)
        )
        return WorkflowCallback.objects.get(pk=receipt.id)


def kept():
    with system_scope():
        return set(WorkflowCallback.objects.values_list("pk", flat=True))


def test_unresolved_and_pending_receipts_outlive_their_rule(own_rules, op, tenant_a):
    # given a rule keeping callback receipts 30 days, and receipts 60 days old: one for
    # an unknown instance nobody resolved (in the attention queue), one dismissed, one
    # pending a worker, one applied
    services.rule_create(
        actor=op,
        name="callback-receipts-30d",
        period_days=30,
        action="delete",
        data_class=DataClass.objects.get(slug="steward-callback-receipts"),
    )
    unresolved = received(uuid.uuid4(), days_old=60)
    dismissed = received(uuid.uuid4(), days_old=60)
    assets.callback_dismiss(receipt=dismissed, actor=SYSTEM_ACTOR, reason="staging noise")
    _, decided_instance = delegated(tenant_a, "decided")
    applied = received(decided_instance, days_old=60)
    assets.drain_callbacks(tenant_a.pk)
    _, waiting_instance = delegated(tenant_a, "waiting")
    pending = received(waiting_instance, days_old=60)  # its worker has not run yet
    with system_scope():
        outcomes = dict(WorkflowCallback.objects.values_list("pk", "outcome"))
    assert (outcomes[applied.pk], outcomes[pending.pk]) == ("applied", "pending")
    # the preview counts only what the sweep will take
    [preview] = [
        row for row in selectors.own_tables_preview(NIGHT, holds=[]) if row["table"] == RECEIPTS
    ]
    assert preview["rows"] == 2

    # when the nightly sweep runs
    results = services.sweep_run(now=NIGHT).results["tables"][RECEIPTS]

    # then the open work is kept, and it is still in the attention queue
    assert results["rows"] == 2
    assert kept() == {unresolved.pk, pending.pk}
    with system_scope():
        assert list(asset_selectors.unknown_instance_callbacks().values_list("pk", flat=True)) == [
            unresolved.pk
        ]


def test_each_app_says_which_rows_of_its_tables_are_open_work():
    declared = sweeper.open_work()
    assert "unknown_instance" in declared[RECEIPTS]
    table = next(t for t in sweeper.OWN_TABLES if t.model == RECEIPTS)
    assert table.expiring == f"NOT ({declared[RECEIPTS]})"
