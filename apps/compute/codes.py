"""The error codes the compute app answers with (apps.core.codes)."""

from __future__ import annotations

from apps.core.codes import Codes


class ComputeCode(Codes):
    IDEMPOTENCY_KEY_REUSED = (
        "idempotency_key_reused",
        "The submission's idempotency key was used for another workflow step.",
    )
