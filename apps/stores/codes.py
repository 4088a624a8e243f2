"""The stable error codes the stores app answers with (apps.core.codes)."""

from __future__ import annotations

from apps.core.codes import Codes


class StoreCode(Codes):
    BINDING_EXISTS = (
        "binding_exists",
        "The tenant already has a live binding of the store on another profile or region; "
        "retire it first.",
    )
    RESIDENCY_VIOLATION = (
        "residency_violation",
        "The residency rules in force do not allow the binding (the body carries the "
        "verdict's explanation and rule_id).",
    )
    WORKLOAD_NOT_ALLOWED = (
        "workload_not_allowed",
        "Workload gating does not allow the store's workload on the profile on the evidence "
        "in force.",
    )
    BINDING_NOT_STALLED = (
        "binding_not_stalled",
        "Retrying a binding that is neither Requested nor Retiring: it has no work to send again.",
    )
    BINDING_NOT_LIVE = (
        "binding_not_live",
        "Granting an exception to a binding that is not Requested, Provisioned or Active.",
    )
    NOT_FLAGGED = (
        "not_flagged",
        "Granting an exception to a binding the residency rules are not refusing.",
    )
    BINDING_LIVE = (
        "binding_live",
        "Recording a binding's data gone while the binding is still live; retire it first.",
    )
    RUN_REQUIRED = (
        "run_required",
        "Workload evidence that does not name the run it came from (run_reference).",
    )
    ROLLBACK_GUIDANCE_REQUIRED = (
        "rollback_guidance_required",
        "A physicalization policy without rollback guidance.",
    )
    TENANT_IMMUTABLE = (
        "tenant_immutable",
        "Changing a residency rule's tenant; create a rule for the other tenant instead.",
    )
    EVIDENCE_REQUIRED = (
        "evidence_required",
        "Certifying a profile without the benchmark evidence (benchmark_reference).",
    )
    ALREADY_CERTIFIED = (
        "already_certified",
        "The profile is already certified for the workload; revoke that certification first.",
    )
    PILOT_NOT_RUNTIME_ADJACENT = (
        "pilot_not_runtime_adjacent",
        "A migration pilot (step 6) names a store that is not a non-critical runtime-adjacent "
        "one (workflow instance / query surfaces): module data needs none, hot paths come last.",
    )
    INVALID_PILOT_PERIOD = (
        "invalid_pilot_period",
        "A migration pilot that ends before it starts, or a running pilot given an end.",
    )
