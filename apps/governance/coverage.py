"""Governance's reading of the tables every app registers (apps.core.governed): which of
Steward's own tables a deletion phase removes and an export includes, and the models it
checks the registrations against."""

from __future__ import annotations

from django.apps import apps

from apps.core.governed import governed_tables
from apps.tenancy.models import Tenant


def tables_of_phase(phase: str) -> list[str]:
    """The labels of the tables a deletion removes (or redacts) in `phase`, sorted."""
    return sorted(label for label, c in governed_tables().items() if c.phase == phase)


def exported_tables() -> list[str]:
    """The labels of the tables an export includes, sorted."""
    return sorted(label for label, c in governed_tables().items() if c.exported)


def tenant_field_of(model) -> str | None:
    """The name of the model's foreign key to Tenant, if it has one."""
    return next(
        (
            f.name
            for f in model._meta.concrete_fields
            if f.many_to_one and f.related_model is Tenant
        ),
        None,
    )


def tenant_owned_models() -> list:
    """Every installed model with a foreign key to Tenant."""
    return [model for model in apps.get_models() if tenant_field_of(model) is not None]
