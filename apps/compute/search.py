"""Compute batches by id in the console's search (apps.core.search). A batch has no
page of its own: the match opens the batch list at the workflow step it ran for."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from apps.compute import selectors
from apps.core.search import Match, Query

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    if query.uuid is None:
        return []
    batches = selectors.batch_list().filter(pk=query.uuid)
    return [
        Match(
            "Compute batch",
            f"batch {batch.pk}",
            "{}?{}".format(
                reverse("compute:batch-list"),
                urlencode(
                    {
                        "workflow_instance_id": batch.workflow_instance_id,
                        "workflow_step_id": batch.workflow_step_id,
                    }
                ),
            ),
            f"{batch.tenant.slug}, {batch.get_status_display().lower()}",
        )
        for batch in batches[:SHOWN]
    ]
