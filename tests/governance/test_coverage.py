"""The governance gate: no tenant table escapes deletion, export and retention by being
forgotten (the foundation's row-level-security gate is the model for this). Each app
registers its own tables in its governed.py (apps.core.governed)."""

from apps.core.governed import PHASES, exempt_tables, governed_tables
from apps.core.hooks import app_modules
from apps.governance.coverage import tenant_owned_models
from apps.governance.retention.sweeper import OWN_CLASS, OWN_TABLES
from apps.governance.steward_owner.deletion import NOT_DELETED


def test_every_tenant_model_is_governed_or_exempted_with_a_reason():
    GOVERNED, EXEMPT = governed_tables(), exempt_tables()
    labels = {model._meta.label for model in tenant_owned_models()}
    assert {"assets.Asset", "tenancy.AuditEvent", "stores.StoreBinding"} <= labels
    missing = sorted(labels - set(GOVERNED) - set(EXEMPT))
    assert not missing, f"tenant models governance does not cover: {missing}"
    assert not set(GOVERNED) & set(EXEMPT), "a model is both governed and exempt"
    assert all(reason.strip() for reason in EXEMPT.values()), "an exemption needs a reason"


def test_the_lists_name_only_real_tenant_models_and_real_phases():
    GOVERNED, EXEMPT = governed_tables(), exempt_tables()
    labels = {model._meta.label for model in tenant_owned_models()}
    assert set(GOVERNED) | set(EXEMPT) <= labels, "a listed model is not a tenant model"
    assert {coverage.phase for coverage in GOVERNED.values()} <= set(PHASES)


def test_each_app_registers_only_its_own_tables():
    for module in app_modules("governed"):
        app_label = module.__name__.split(".")[-2]
        # apps.core.governed is found too: it collects, and registers nothing itself.
        listed = {*getattr(module, "GOVERNED", {}), *getattr(module, "EXEMPT", {})}
        assert {label.split(".")[0] for label in listed} <= {app_label}, module.__name__


def test_audit_evidence_is_redacted_never_deleted():
    GOVERNED = governed_tables()
    assert GOVERNED["tenancy.AuditEvent"].phase == "audit_redaction"
    assert "tenancy.AuditEvent" in NOT_DELETED


def test_each_governed_table_names_the_steward_data_class_that_expires_it():
    """A governed table's `retention` is the class its rows are swept under, and every
    tenant table the sweeper expires says so: the two lists cannot drift apart."""
    GOVERNED = governed_tables()
    swept = {table.label: table.data_class for table in OWN_TABLES if table.label in GOVERNED}
    named = {label: c.retention for label, c in GOVERNED.items() if c.retention}
    assert named == swept
    assert set(named.values()) <= set(OWN_CLASS)
