"""The topics Steward itself produces."""

from __future__ import annotations

from apps.registry.models import Service, Topic

STEWARD_SERVICE = "steward"
# Each description fits Topic.description (255 characters; a test holds them to it).
STEWARD_TOPICS = [
    ("tenancy.tenant", "Tenant lifecycle: tenant.created, tenant.updated."),
    ("compute.step", "Workflow steps waiting on compute: step_completed."),
    (
        "assets.asset",
        "Asset approval: AssetApprovalRequested, AssetApprovalDelegated, "
        "AssetApproved, AssetRejected, AssetRetired, AssetDeleted, AssetDelegationFailed, "
        "WorkflowCallbackIgnored, WorkflowCallbackUnknownInstance, UncertainEffectEscalated.",
    ),
    (
        "registry.schema",
        "Schema registry, for observers: SchemaVersionPublished, "
        "SchemaVersionAwaitingAcknowledgement, SchemaVersionWithdrawn, TopicCompatibilityLowered, "
        "TopicProducersJoined. "
        "Each consumer gets its own copy of its topics' news on registry.news.<service>.",
    ),
    (
        "stores.binding",
        "Store bindings: StoreBindingChanged (every status change, references only), "
        "ResidencyViolationDetected, ResidencyExceptionGranted, ResidencyExceptionExpired.",
    ),
    (
        "governance.order",
        "Governance orders: GovernanceTaskOverdue, GovernanceTaskEscalated, "
        "DeletionOrderCompleted, ExportCompleted. Each owner's tasks (issued, reminded, "
        "reassigned, paused, resumed) go to it on governance.tasks.<owner>.",
    ),
]


def install_steward_topics(service_model=Service, topic_model=Topic) -> list[str]:
    """Create Steward's own topics where missing (idempotent); the names created.

    Migrations pass their historical models; everyone else, the registry's own.
    """
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
