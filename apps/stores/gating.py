"""Workload gating: may a store of this workload class run on this profile?

The persistence decision, codified. Its four classes:

- **go** (catalog: workflow definitions, metadata, secrets, labels, tenants, admin-defined
  entities and other document-friendly module data): any profile.
- **conditional go** (workflow instance management and query surfaces): allowed on a
  profile only with passed benchmarks of its declared indexes for the common filters
  (status, sub-status, definition id, version, correlation id, updated timestamp);
  a physicalization policy for them is preferred, and the verdict says when it is absent.
- **no-go for now, benchmark-gated** (hot distributed lookups: bookmarks and triggers):
  allowed only when representative benchmarks on every supported provider, the
  provider contract tests on every provider and a physicalization policy with
  rollback guidance are all recorded as passed, and the profile is certified.
- **specialized providers only** (bookmark, dispatch and outbox queues; activity
  execution records and workflow execution logs): a specialised profile (not portable
  documents) with retention cleanup, certified, with passed dequeue, lease, retry and
  dead-letter benchmarks (queues) or log-append and retention-cleanup throughput (logs).

Evidence is structured records (apps.stores.models: BenchmarkResult, ContractTestResult,
PhysicalizationPolicy), the latest of each kind deciding; the verdict names exactly
which evidence is missing or failed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from apps.stores.models import (
    Provider,
    ProviderContract,
    QueryShape,
    StoreProfile,
    WorkloadClass,
)

GO, CONDITIONAL, NO_GO = "go", "conditional", "no_go"

# The persistence decision's classes, by workload.
CLASS_GO = "go"
CLASS_CONDITIONAL_GO = "conditional_go"
CLASS_BENCHMARK_GATED = "no_go_benchmark_gated"
CLASS_SPECIALIZED = "specialized_only"
PERSISTENCE_CLASS = {
    WorkloadClass.CATALOG: CLASS_GO,
    WorkloadClass.INSTANCE_QUERY: CLASS_CONDITIONAL_GO,
    WorkloadClass.HOT_LOOKUP: CLASS_BENCHMARK_GATED,
    WorkloadClass.QUEUE: CLASS_SPECIALIZED,
    WorkloadClass.APPEND_LOG: CLASS_SPECIALIZED,
}

PROVIDERS = tuple(Provider.values)  # SQLite, SQL Server, PostgreSQL, MongoDB
INSTANCE_FILTERS = (
    QueryShape.INSTANCE_STATUS,
    QueryShape.INSTANCE_SUB_STATUS,
    QueryShape.INSTANCE_DEFINITION_ID,
    QueryShape.INSTANCE_VERSION,
    QueryShape.INSTANCE_CORRELATION_ID,
    QueryShape.INSTANCE_UPDATED_AT,
)
HOT_LOOKUP_SHAPES = (
    QueryShape.BOOKMARK_ACTIVITY_TYPE,
    QueryShape.BOOKMARK_HASH,
    QueryShape.BOOKMARK_INSTANCE_ID,
    QueryShape.BOOKMARK_TENANT_ID,
    QueryShape.TRIGGER_HASH,
    QueryShape.TRIGGER_DEFINITION_ID,
    QueryShape.TRIGGER_TENANT_ID,
)
SPECIALIZED_SHAPES = {
    WorkloadClass.QUEUE: (
        QueryShape.QUEUE_DEQUEUE,
        QueryShape.QUEUE_LEASE,
        QueryShape.QUEUE_RETRY,
        QueryShape.QUEUE_DEAD_LETTER,
    ),
    WorkloadClass.APPEND_LOG: (QueryShape.LOG_APPEND, QueryShape.LOG_RETENTION_CLEANUP),
}
CONTRACTS = tuple(ProviderContract.values)

# The migration strategy's words for the workload classes: module and management data is
# low-risk (step 2); workflow instance and query surfaces are runtime-adjacent, what a
# pilot tries first (step 6); bookmarks and triggers, queues and execution logs are the
# runtime's hot paths, migrated last (step 7).
LOW_RISK = frozenset({WorkloadClass.CATALOG})
RUNTIME_ADJACENT = frozenset({WorkloadClass.INSTANCE_QUERY})
HOT_PATHS = frozenset({WorkloadClass.HOT_LOOKUP, WorkloadClass.QUEUE, WorkloadClass.APPEND_LOG})


def runtime_shapes(workload: str) -> tuple[str, ...]:
    """The workflow runtime query shapes a workload's benchmarks cover."""
    if workload == WorkloadClass.INSTANCE_QUERY:
        return INSTANCE_FILTERS
    if workload == WorkloadClass.HOT_LOOKUP:
        return HOT_LOOKUP_SHAPES
    return SPECIALIZED_SHAPES.get(WorkloadClass(workload), ())


def provider_gaps(workload: str, evidence: Evidence) -> dict[str, list[str]]:
    """Step 7's evidence for a hot path, by supported provider: what is absent or failed
    there, of the workload's benchmarks (the latest record of a shape on the provider,
    provider-wide or of any profile) and of every provider contract test. A provider
    with no gaps is covered."""
    gaps: dict[str, list[str]] = {}
    for provider in PROVIDERS:
        missing = gaps.setdefault(provider, [])
        for shape in runtime_shapes(workload):
            found = [
                r for (s, p, _), r in evidence.benchmarks.items() if (s, p) == (shape, provider)
            ]
            latest = max(found, key=lambda r: (r.recorded_at, r.pk or 0), default=None)
            if latest is None:
                missing.append(f"benchmark {shape} on {provider}: none recorded")
            elif not latest.passed:
                missing.append(
                    f"benchmark {shape} on {provider}: failed (run {latest.run_reference})"
                )
        for contract in CONTRACTS:
            record = evidence.contracts.get((contract, provider))
            if record is None:
                missing.append(f"contract test {contract} on {provider}: none recorded")
            elif not record.passed:
                missing.append(
                    f"contract test {contract} on {provider}: failed (run {record.run_reference})"
                )
    return gaps


@dataclass(frozen=True)
class Evidence:
    """The latest evidence records, by what they are evidence of."""

    benchmarks: dict = field(default_factory=dict)  # (shape, provider, profile id|None)
    contracts: dict = field(default_factory=dict)  # (contract, provider)
    policies: dict = field(default_factory=dict)  # (profile id, workload)

    @classmethod
    def of(cls, benchmarks=(), contracts=(), policies=()) -> Evidence:
        def latest(records, key):
            found = {}
            for record in sorted(records, key=lambda r: (r.recorded_at, r.pk or 0)):
                found[key(record)] = record
            return found

        return cls(
            latest(benchmarks, lambda r: (r.query_shape, r.provider, r.profile_id)),
            latest(contracts, lambda r: (r.contract, r.provider)),
            latest(policies, lambda r: (r.profile_id, r.workload_class)),
        )


NO_EVIDENCE = Evidence()


@dataclass(frozen=True)
class WorkloadVerdict:
    decision: str  # go, conditional or no_go
    reasons: tuple[str, ...]
    evidence: str = ""  # the certification's benchmark reference, when one decided
    certification_id: int | None = None  # the certification the verdict relies on
    persistence_class: str = ""
    missing: tuple[str, ...] = ()  # exactly which evidence is absent or failed
    relied_on: tuple[str, ...] = ()  # the evidence records it rests on (kind:id)

    @property
    def allows(self) -> bool:
        return self.decision in (GO, CONDITIONAL)

    def as_dict(self) -> dict:
        return {
            **asdict(self),
            "reasons": list(self.reasons),
            "missing": list(self.missing),
            "relied_on": list(self.relied_on),
        }


class _Check:
    """Collects what the evidence lacks and the records it rests on, and gives the
    verdict on them."""

    def __init__(self, evidence: Evidence, persistence_class: str, certification=None):
        self.evidence = evidence
        self.persistence_class = persistence_class
        self.certification_in_force = certification
        self.missing: list[str] = []
        self.relied_on: list[str] = []

    def verdict(self, decision: str, *reasons: str) -> WorkloadVerdict:
        if self.missing:
            reasons = (*reasons, f"Missing: {'; '.join(self.missing)}.")
        certification = self.certification_in_force
        relies = certification is not None and self.persistence_class in (
            CLASS_BENCHMARK_GATED,
            CLASS_SPECIALIZED,
        )
        return WorkloadVerdict(
            decision,
            tuple(reasons),
            evidence=certification.benchmark_reference if relies else "",
            certification_id=certification.pk if relies else None,
            persistence_class=self.persistence_class,
            missing=tuple(self.missing),
            relied_on=tuple(self.relied_on),
        )

    def benchmark(self, shape: str, provider: str, profile: StoreProfile | None = None):
        record = self.evidence.benchmarks.get((shape, provider, profile.pk if profile else None))
        where = f"profile {profile.slug}" if profile else provider
        if record is None:
            self.missing.append(f"benchmark {shape} on {where}: none recorded")
        elif not record.passed:
            unit = f" {record.unit}" if record.unit else ""
            self.missing.append(
                f"benchmark {shape} on {where}: failed ({record.figure:g}{unit} against "
                f"threshold {record.threshold:g}{unit}, run {record.run_reference})"
            )
        else:
            self.relied_on.append(f"benchmark:{record.pk}")

    def contract(self, contract: str, provider: str):
        record = self.evidence.contracts.get((contract, provider))
        if record is None:
            self.missing.append(f"contract test {contract} on {provider}: none recorded")
        elif not record.passed:
            self.missing.append(
                f"contract test {contract} on {provider}: failed (run {record.run_reference})"
            )
        else:
            self.relied_on.append(f"contract:{record.pk}")

    def policy(self, profile: StoreProfile, workload: str, *, preferred: bool = False) -> bool:
        record = self.evidence.policies.get((profile.pk, workload))
        if record is None or not record.rollback_guidance.strip():
            what = "none recorded" if record is None else "no rollback guidance"
            self.missing.append(
                f"physicalization policy for {workload} on profile {profile.slug}: {what}"
                + (" (preferred)" if preferred else "")
            )
            return False
        self.relied_on.append(f"policy:{record.pk}")
        return True

    def certification(self, profile: StoreProfile, workload: str, certification) -> None:
        if certification is None:
            self.missing.append(
                f"certification of profile {profile.slug} for {workload}: none in force"
            )


def evaluate_workload(
    workload: str, profile: StoreProfile, certification=None, evidence: Evidence | None = None
) -> WorkloadVerdict:
    """`certification`: the profile's live certification for `workload`, or None;
    `evidence`: the latest evidence records (selectors.workload_evidence)."""
    evidence = evidence or NO_EVIDENCE
    label = WorkloadClass(workload).label
    klass = PERSISTENCE_CLASS[WorkloadClass(workload)]
    check = _Check(evidence, klass, certification)

    if klass == CLASS_GO:
        return check.verdict(GO, f"{label} stores are go on any profile.")

    if klass == CLASS_CONDITIONAL_GO:
        for shape in INSTANCE_FILTERS:
            check.benchmark(shape, profile.engine, profile)
        if check.missing:
            return check.verdict(
                NO_GO,
                f"{label} are conditional go: allowed on profile {profile.slug} only with "
                "passed benchmarks of its declared indexes for the common filters.",
            )
        reasons = [f"Benchmarks of the common filters passed on profile {profile.slug}."]
        if not check.policy(profile, workload, preferred=True):
            reasons.append("No physicalization policy for these filters is recorded.")
        return check.verdict(CONDITIONAL, *reasons)

    check.certification(profile, workload, certification)
    if klass == CLASS_BENCHMARK_GATED:
        for provider in PROVIDERS:
            for shape in HOT_LOOKUP_SHAPES:
                check.benchmark(shape, provider)
        for provider in PROVIDERS:
            for contract in CONTRACTS:
                check.contract(contract, provider)
        check.policy(profile, workload)
        if check.missing:
            return check.verdict(
                NO_GO,
                f"{label} stores are no-go for now: allowed only with passed benchmarks "
                "and contract tests on every supported provider, a physicalization policy "
                "with rollback guidance and a certified profile.",
            )
        return check.verdict(
            GO,
            f"The benchmark gate for {label.lower()} stores passed on every provider; it "
            "holds while the certification is not revoked.",
        )

    # Specialized providers only: queues and append logs.
    if profile.shape == StoreProfile.Shape.PORTABLE_DOCUMENTS:
        check.missing.insert(0, f"a specialised profile ({profile.slug} is portable documents)")
    if not profile.provides_retention_cleanup:
        check.missing.append(f"retention cleanup on profile {profile.slug}")
    for shape in SPECIALIZED_SHAPES[WorkloadClass(workload)]:
        check.benchmark(shape, profile.engine, profile)
    if check.missing:
        return check.verdict(
            NO_GO,
            f"{label} stores run on specialised providers only, with retention cleanup, "
            "a certification and passed throughput benchmarks on the profile.",
        )
    return check.verdict(
        GO,
        f"Specialised profile certified for {label.lower()} stores, with retention cleanup "
        "and passed benchmarks.",
    )
