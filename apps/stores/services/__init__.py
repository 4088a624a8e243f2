"""Store bindings: residency and workload evaluated, credentials by reference only.

SetStoreBinding evaluates residency (tenant, the store's data class, region) and
workload gating (the store's workload class, the profile). Refused, the binding is
recorded as Refused with the verdict that refused it and nothing is provisioned.
Allowed, it is Requested and a worker asks the secret broker for credentials; the
references make it Provisioned. Provisioning reports the migrations applied (Active);
retiring revokes the credentials (Retiring → Retired). Every status change is a move
along StoreBinding.TRANSITIONS, a history row and a StoreBindingChanged event.

Callers use this package as one module (`from apps.stores import services`); each use
case lives in the module of its concern, innermost first:

    bindings     the lifecycle, the history and the binding's events
    rules        residency rules, and flagging the bindings they no longer allow
    decisions    an operator's exception; workload verdicts evaluated again
    evidence     workload evidence and profile certifications
"""

from apps.stores.services.bindings import (
    TOPIC,
    binding_migrations_applied,
    binding_provision,
    binding_record_credentials,
    binding_record_data_purged,
    binding_retire,
    binding_retry,
    binding_revoke,
    binding_set,
    resume_stalled_bindings,
    tenant_refusal,
)
from apps.stores.services.decisions import (
    DECIDABLE,
    binding_grant_exception,
    expire_exceptions,
    reevaluate_bindings,
    reevaluate_workload,
)
from apps.stores.services.evidence import (
    benchmark_record,
    certification_record,
    certification_revoke,
    contract_test_record,
    expire_certifications,
    expire_exceptions_and_certifications,
    pilot_record,
    policy_record,
)
from apps.stores.services.rules import (
    RULE_FIELDS,
    flag_violations,
    rule_create,
    rule_delete,
    rule_update,
)

__all__ = [
    "DECIDABLE",
    "RULE_FIELDS",
    "TOPIC",
    "benchmark_record",
    "binding_grant_exception",
    "binding_migrations_applied",
    "binding_provision",
    "binding_record_credentials",
    "binding_record_data_purged",
    "binding_retire",
    "binding_retry",
    "binding_revoke",
    "binding_set",
    "certification_record",
    "certification_revoke",
    "contract_test_record",
    "expire_certifications",
    "expire_exceptions",
    "expire_exceptions_and_certifications",
    "flag_violations",
    "pilot_record",
    "policy_record",
    "reevaluate_bindings",
    "reevaluate_workload",
    "resume_stalled_bindings",
    "rule_create",
    "rule_delete",
    "rule_update",
    "tenant_refusal",
]
