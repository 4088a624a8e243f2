"""The governance gate: no tenant table escapes deletion, export and retention by being
forgotten (the foundation's row-level-security gate is the model for this)."""

from apps.governance.coverage import EXEMPT, GOVERNED, PHASES, tenant_owned_models


def test_every_tenant_model_is_governed_or_exempted_with_a_reason():
    labels = {model._meta.label for model in tenant_owned_models()}
    assert {"assets.Asset", "tenancy.AuditEvent", "stores.StoreBinding"} <= labels
    missing = sorted(labels - set(GOVERNED) - set(EXEMPT))
    assert not missing, f"tenant models governance does not cover: {missing}"
    assert not set(GOVERNED) & set(EXEMPT), "a model is both governed and exempt"
    assert all(reason.strip() for reason in EXEMPT.values()), "an exemption needs a reason"


def test_the_lists_name_only_real_tenant_models_and_real_phases():
    labels = {model._meta.label for model in tenant_owned_models()}
    assert set(GOVERNED) | set(EXEMPT) <= labels, "a listed model is not a tenant model"
    assert {coverage.phase for coverage in GOVERNED.values()} <= set(PHASES)


def test_audit_evidence_is_redacted_never_deleted():
    from apps.governance.own import NOT_DELETED

    assert GOVERNED["tenancy.AuditEvent"].phase == "audit_redaction"
    assert "tenancy.AuditEvent" in NOT_DELETED
