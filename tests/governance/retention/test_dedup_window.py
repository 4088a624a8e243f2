"""The inbox's retention rule is the deduplication window and the re-drive window: no
rule naming Steward's handled-event receipts may keep them shorter than the 72 h the
design promises, and set-up never installs one shorter, whatever the setting says."""

import pytest

from apps.core.errors import ValidationFailed
from apps.core.setup import SetupReport
from apps.governance import install
from apps.governance.models import RetentionRule
from apps.governance.retention import selectors, services
from apps.tenancy.models import DataClass

pytestmark = pytest.mark.django_db


def test_a_rule_below_the_dedup_window_is_refused(own_rules, op):
    rule = own_rules["steward-event-receipts"]
    with pytest.raises(ValidationFailed) as shortened:
        services.rule_update(actor=op, rule=rule, period_days=2)
    assert shortened.value.code == "retention_period_below_minimum"
    assert shortened.value.extra["minimum_days"] == 3
    with pytest.raises(ValidationFailed) as created:
        services.rule_create(
            actor=op,
            name="receipts-one-day",
            period_days=1,
            action="delete",
            data_class=DataClass.objects.get(slug="steward-event-receipts"),
        )
    assert created.value.code == "retention_period_below_minimum"
    assert RetentionRule.objects.get(pk=rule.pk).period_days == 3
    # longer is the operator's to choose, and it is the window at once
    services.rule_update(actor=op, rule=rule, period_days=5)
    assert selectors.inbox_window().days == 5
    # other classes keep their own floor of a day
    services.rule_update(actor=op, rule=own_rules["steward-dispatched-events"], period_days=1)


def test_set_up_never_installs_a_window_below_the_minimum(db, settings):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "INBOX_RETENTION_HOURS": 24}
    install.install_reference_data(SetupReport())
    assert RetentionRule.objects.get(name="steward-event-receipts").period_days == 3
