from apps.compute import selectors
from apps.compute.filters import ComputeBatchFilterSet, WorkflowBatchLinkFilterSet
from apps.console.listing import Column, ListPage, OperatorRequiredMixin

# The workflow step a batch serves, and whose tenant it is: on both pages.
STEP_COLUMNS = (
    Column("Tenant", "tenant.slug", sort="tenant__slug"),
    Column("Workflow instance", "workflow_instance_id", sort="workflow_instance_id"),
    Column("Step", "workflow_step_id"),
)


class BatchListView(ListPage):
    title = "Compute batches"
    related_pages = (("Outstanding batch links", "compute:link-list"),)
    filterset_class = ComputeBatchFilterSet
    search_fields = ("workflow_instance_id", "workflow_step_id", "idempotency_key")
    default_ordering = "-created_at"
    columns = (
        Column("Created", "created_at", sort="created_at"),
        *STEP_COLUMNS,
        Column("Status", "get_status_display", sort="status"),
        Column("Finished", "finished_at", sort="finished_at"),
    )

    def get_base_queryset(self):
        return selectors.batch_list()


class LinkListView(OperatorRequiredMixin, ListPage):
    """Steps waiting on a batch, read-only: links are Steward's internal state."""

    title = "Outstanding batch links"
    empty = "No batch links outstanding: no workflow step waits on a compute batch."
    filterset_class = WorkflowBatchLinkFilterSet
    search_fields = ("workflow_instance_id", "workflow_step_id")
    default_ordering = "created_at"
    columns = (
        Column("Waiting since", "created_at", sort="created_at"),
        *STEP_COLUMNS,
        Column("Batch", "batch_id"),
        Column("Stale", "is_stale", sort="is_stale"),
    )

    def get_base_queryset(self):
        return selectors.link_list()
