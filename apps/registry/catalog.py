"""The topics Steward itself produces."""

from __future__ import annotations

STEWARD_SERVICE = "steward"
STEWARD_TOPICS = [
    ("tenancy.tenant", "Tenant lifecycle: tenant.created, tenant.updated."),
    ("compute.step", "Workflow steps waiting on compute: step_completed."),
    (
        "assets.asset",
        "Asset approval: AssetApprovalRequested, AssetApprovalDelegated, "
        "AssetApproved, AssetRejected, WorkflowCallbackIgnored.",
    ),
    (
        "registry.schema",
        "Schema registry: SchemaVersionPublished, SchemaVersionAwaitingAcknowledgement.",
    ),
    (
        "stores.binding",
        "Store bindings: StoreBindingChanged (every status change, references only), "
        "ResidencyViolationDetected.",
    ),
    (
        "governance.order",
        "Governance orders: GovernanceTaskOverdue, DeletionOrderCompleted, ExportCompleted. "
        "Tasks go to each owner on governance.tasks.<owner>: GovernanceTaskIssued.",
    ),
]


def install_steward_topics(service_model=None, topic_model=None) -> list[str]:
    """Create Steward's own topics where missing (idempotent); the names created."""
    if service_model is None or topic_model is None:
        from apps.registry.models import Service as service_model
        from apps.registry.models import Topic as topic_model

    steward, _ = service_model.objects.get_or_create(
        name=STEWARD_SERVICE, defaults={"description": "Steward, the control plane"}
    )
    created = []
    for name, description in STEWARD_TOPICS:
        topic, new = topic_model.objects.get_or_create(
            name=name, defaults={"description": description}
        )
        topic.producers.add(steward)
        if new:
            created.append(name)
    return created
