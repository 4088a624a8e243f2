"""The boundary to the external Workflow Service that decides delegated approvals.

Steward asks it to start an approval instance for an asset and keeps only the
instance's identifier. The start carries an idempotency key (the asset's approval
request id), so a retry, by this client or by the reconciler, never creates a second
instance; a start whose answer never came is recorded as an uncertain effect and
settled by looking the instance up by that key (apps/assets/effects.py).
Formats: docs/workflow-service.md.
"""

from __future__ import annotations

import logging
import uuid

import httpx
from django.conf import settings

from apps.eventing.effects import OutcomeUnknown

logger = logging.getLogger(__name__)
TARGET = "workflow-service"
START = "start-approval"


class WorkflowServiceError(Exception):
    """The Workflow Service answered, and not with what was asked (a definite answer)."""


class WorkflowServiceRefused(WorkflowServiceError):
    """The Workflow Service refused the start (a 4xx): it holds no instance for the key."""


class WorkflowServiceClient:
    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float | None = None,
        retries: int | None = None,
    ):
        self.base_url = (base_url or settings.STEWARD_WORKFLOW_SERVICE_URL).rstrip("/")
        self.retries = settings.STEWARD_WORKFLOW_RETRIES if retries is None else retries
        self.http = httpx.Client(
            timeout=timeout or settings.STEWARD_WORKFLOW_TIMEOUT_SECONDS, follow_redirects=False
        )

    def start_approval(self, *, idempotency_key: str, asset_id: str, tenant_id: str) -> uuid.UUID:
        """Start an approval instance; the same key always answers the same instance."""
        body = {
            "definition": "asset-approval",
            "idempotency_key": idempotency_key,
            "subject": {"type": "asset", "id": asset_id, "tenant_id": tenant_id},
        }
        last_error = None
        for _ in range(self.retries + 1):
            try:
                response = self.http.post(
                    f"{self.base_url}/instances",
                    json=body,
                    headers={"Idempotency-Key": idempotency_key},
                )
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_error = exc  # unknown outcome: retrying with the same key is safe
                continue
            if response.status_code >= 500:
                last_error = WorkflowServiceError(f"HTTP {response.status_code}")
                continue
            if 400 <= response.status_code < 500:
                raise WorkflowServiceRefused(f"HTTP {response.status_code}: {response.text[:200]}")
            if response.status_code not in (200, 201):
                raise WorkflowServiceError(f"HTTP {response.status_code}: {response.text[:200]}")
            return uuid.UUID(response.json()["instance_id"])
        raise OutcomeUnknown(f"no answer from the Workflow Service: {last_error}")

    def instance_state(self, instance_id: uuid.UUID) -> dict | None:
        """`{"state": "running" | "completed", "decision": "approve" | "reject" | null}`,
        or None when the service does not know the instance."""
        response = self.http.get(f"{self.base_url}/instances/{instance_id}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def find_by_key(self, idempotency_key: str) -> uuid.UUID | None:
        """The instance started under this key, or None when the service has none."""
        response = self.http.get(
            f"{self.base_url}/instances", params={"idempotency_key": idempotency_key}
        )
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return uuid.UUID(response.json()["instance_id"])
