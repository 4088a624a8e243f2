"""Reads of the stores app: the lists pages and endpoints show, and the residency and
workload evaluations that decide nothing by themselves (services act on them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet
from django.utils import timezone

from apps.core.scope import system_scope
from apps.registry.models import Service
from apps.stores import gating, residency
from apps.stores.gating import Evidence, WorkloadVerdict, evaluate_workload
from apps.stores.models import (
    LIVE_STATUSES,
    BenchmarkResult,
    ContractTestResult,
    MigrationPilot,
    PhysicalizationPolicy,
    ProfileCertification,
    ResidencyRule,
    Store,
    StoreBinding,
    StoreBindingChange,
    StoreProfile,
    WorkloadClass,
)

Status = StoreBinding.Status

# The live bindings a rule change is checked against: Requested ones too, which
# would otherwise become Provisioned under a rule that no longer allows them.
CHECKED = [Status.REQUESTED, Status.PROVISIONED, Status.ACTIVE]


# --------------------------------------------------------------------------- lists


def binding_list() -> QuerySet[StoreBinding]:
    return StoreBinding.objects.select_related(
        "tenant", "store", "profile", "region"
    ).prefetch_related("history")


def live_binding_list() -> QuerySet[StoreBinding]:
    """The bindings that hold or may come to hold a tenant's data (Requested,
    Provisioned, Active, Retiring), with their store, its owner and data class."""
    return StoreBinding.objects.filter(status__in=LIVE_STATUSES).select_related(
        "tenant", "store", "store__owning_service", "store__data_class", "region"
    )


def never_provisioned() -> Q:
    """Bindings that never held data: failed before the broker's credentials were
    recorded, or retired straight from Requested (its provisioning cancelled)."""
    cancelled = StoreBindingChange.objects.filter(
        binding=OuterRef("pk"), from_status=Status.REQUESTED, to_status=Status.RETIRING
    )
    return Q(status=Status.FAILED, key_reference="", connection_reference="") | Q(
        Exists(cancelled), status=Status.RETIRED
    )


def bindings_holding_tenant_data(tenant_id) -> QuerySet[StoreBinding]:
    """Every binding that holds or held the tenant's data, retired ones included, for
    governance to ask each owner for deletion: all but the refused ones and those that
    failed or were retired before the broker's credentials were recorded (nothing was
    ever stored). A retired
    binding stays here, with `data_purged_at` empty, until the owner's receipt says
    the data is gone (services.binding_record_data_purged)."""
    return (
        StoreBinding.objects.filter(tenant_id=tenant_id)
        .exclude(status=Status.REFUSED)
        .exclude(never_provisioned())
        .select_related("tenant", "store", "store__owning_service", "store__data_class", "region")
        .order_by("created_at", "id")
    )


@dataclass(frozen=True)
class BindingCoverage:
    """Whether a deletion has reached one binding of the tenant: `covered` by the owner's
    receipt (`receipt`) or by a stated reason it never held data; else `reason` says
    what it waits for."""

    binding: StoreBinding
    covered: bool
    reason: str
    receipt: dict | None = None

    def as_dict(self) -> dict:
        b = self.binding
        return {
            "binding": str(b.pk),
            "store": b.store.slug,
            "owner": b.store.owning_service.name,
            "status": b.status,
            "covered": self.covered,
            "reason": self.reason,
            "receipt": self.receipt,
        }


def binding_erasure_coverage(tenant_id) -> list[BindingCoverage]:
    """Every binding of the tenant there is (live, retiring, retired, refused, failed:
    whatever governance may delete later is read before it does), each with whether the
    tenant's data there is known gone, for a deletion order's completion check: it
    completes only when every one is covered, and otherwise says which wait and why.
    In the caller's scope (the tenant's, or the system's)."""
    bindings = (
        StoreBinding.objects.filter(tenant_id=tenant_id)
        .annotate(held_nothing=ExpressionWrapper(never_provisioned(), BooleanField()))
        .select_related("store", "store__owning_service", "region")
        .order_by("created_at", "id")
    )
    return [_coverage(binding) for binding in bindings]


def _coverage(b: StoreBinding) -> BindingCoverage:
    owner = b.store.owning_service.name
    if b.data_purged_at is not None:
        return BindingCoverage(
            b, True, f"{owner}'s receipt says the data is gone.", b.data_purge_receipt or {}
        )
    if b.status == Status.REFUSED:
        return BindingCoverage(b, True, "Refused when requested: it never held the data.")
    if b.status in LIVE_STATUSES:
        return BindingCoverage(
            b, False, f"Still {b.status}: retire it, then {owner}'s receipt is needed."
        )
    if b.held_nothing:
        return BindingCoverage(
            b,
            True,
            f"Never provisioned ({b.status} before any credentials were recorded): it never "
            "held the data.",
        )
    return BindingCoverage(
        b, False, f"{b.get_status_display()}; waiting for {owner}'s receipt that the data is gone."
    )


def bindings_awaiting_decision() -> QuerySet[StoreBinding]:
    """Flagged bindings (residency or workload) that wait on an operator: retire the
    binding, or grant it a residency exception."""
    return (
        StoreBinding.objects.filter(status__in=CHECKED)
        .filter(~Q(violation="") | ~Q(workload_violation=""))
        .select_related("tenant", "store", "profile", "region")
        .order_by("violation_detected_at", "workload_violation_detected_at", "id")
    )


def bindings_stalled(older_than) -> QuerySet[StoreBinding]:
    """Bindings that should have moved on by now and have not: Requested (not refused,
    not flagged) or Retiring, untouched since `older_than`, though the minute's sweep
    sends their work again. A broker that keeps failing, or a worker that never runs,
    leaves them here: a person looks (apps.stores.attention)."""
    return (
        StoreBinding.objects.filter(
            status__in=[StoreBinding.Status.REQUESTED, StoreBinding.Status.RETIRING],
            updated_at__lt=older_than,
            violation="",
            workload_violation="",
        )
        .select_related("tenant", "store")
        .order_by("updated_at", "id")
    )


def rule_list() -> QuerySet[ResidencyRule]:
    return ResidencyRule.objects.select_related("tenant", "data_class").prefetch_related("regions")


def store_list() -> QuerySet[Store]:
    return Store.objects.select_related("owning_service", "data_class")


def profile_list() -> QuerySet[StoreProfile]:
    return StoreProfile.objects.prefetch_related("certifications")


def certification_list() -> QuerySet[ProfileCertification]:
    return ProfileCertification.objects.select_related("profile")


def owning_services() -> QuerySet[Service]:
    """The registry's services, any of which may own a store. The registry has no
    selector of its services yet; this one reads them until it has."""
    return Service.objects.all()


# --------------------------------------------------------------------------- evaluation


def rule_views(**filters) -> list[residency.RuleView]:
    """The residency rules the current scope sees (its tenant's and all tenants')."""
    rules = ResidencyRule.objects.filter(**filters).prefetch_related("regions")
    rules = rules.select_related("tenant", "data_class")
    return [residency.RuleView.of(rule) for rule in rules]


def live_certification(profile, workload: str) -> ProfileCertification | None:
    """The profile's certification for `workload` that is neither revoked nor expired."""
    return (
        ProfileCertification.objects.filter(
            profile=profile, workload_class=workload, revoked_at__isnull=True
        )
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )


def workload_evidence(profile) -> Evidence:
    """The evidence records a verdict on `profile` may rest on: benchmarks of the
    profile and provider-wide ones, every contract test, the profile's policies."""
    return Evidence.of(
        benchmarks=BenchmarkResult.objects.filter(Q(profile=profile) | Q(profile__isnull=True)),
        contracts=ContractTestResult.objects.all(),
        policies=PhysicalizationPolicy.objects.filter(profile=profile),
    )


def evaluate_profile(workload: str, profile) -> WorkloadVerdict:
    """Workload gating's verdict for `workload` on `profile`, on the evidence in force."""
    return evaluate_workload(
        workload, profile, live_certification(profile, workload), workload_evidence(profile)
    )


def benchmark_list() -> QuerySet[BenchmarkResult]:
    return BenchmarkResult.objects.select_related("profile")


def contract_test_list() -> QuerySet[ContractTestResult]:
    return ContractTestResult.objects.all()


def policy_list() -> QuerySet[PhysicalizationPolicy]:
    return PhysicalizationPolicy.objects.select_related("profile")


def binding_verdicts(
    *, tenant_id, store, profile, region, rules=None
) -> tuple[residency.ResidencyVerdict, WorkloadVerdict]:
    """Both verdicts for binding `store` for the tenant on `profile` in `region`."""
    rules = rule_views() if rules is None else rules
    where = residency.evaluate_residency(
        rules, tenant_id=tenant_id, data_class_id=store.data_class_id, region=region
    )
    how = evaluate_profile(store.workload_class, profile)
    return where, how


def what_if(*, tenant, store, region, profile=None) -> dict:
    """Both verdicts for a binding nobody has asked for yet, explained (residency
    alone when no profile is named)."""
    how = None
    if profile is not None:
        where, how = binding_verdicts(
            tenant_id=tenant.pk, store=store, profile=profile, region=region
        )
    else:
        where = residency.evaluate_residency(
            rule_views(),
            tenant_id=tenant.pk,
            data_class_id=store.data_class_id,
            region=region,
        )
    return {
        "tenant": tenant.slug,
        "store": store.slug,
        "region": region.slug,
        "profile": profile.slug if profile else None,
        "residency": where.as_dict(),
        "workload": how.as_dict() if how else None,
        "allowed": where.allowed and (how is None or how.allows),
    }


def residency_now(binding, rules=None) -> residency.ResidencyVerdict:
    """What the rules in force (`rules`, else those the scope sees) say of a binding
    today; an operator's exception in force for the binding allows it."""
    if binding.exception_in_force():
        return residency.ResidencyVerdict(
            True,
            f"An exception for this binding allows region {binding.region.slug} until "
            f"{binding.exception_expires_at:%Y-%m-%d %H:%M} UTC ({binding.exception_reason}).",
        )
    return residency.evaluate_residency(
        rule_views() if rules is None else rules,
        tenant_id=binding.tenant_id,
        data_class_id=binding.store.data_class_id,
        region=binding.region,
    )


def workload_now(binding) -> WorkloadVerdict:
    """What workload gating says of a binding today, on the evidence in force."""
    return evaluate_profile(binding.store.workload_class, binding.profile)


# --------------------------------------------------------------------------- rule changes


def checked_bindings(rules):
    """Each live binding (by tenant and store) with what `rules` say of it."""
    with system_scope():
        bindings = list(
            StoreBinding.objects.filter(status__in=CHECKED)
            .select_related("store", "profile", "region", "tenant")
            .order_by("tenant__slug", "store__slug")
        )
    for binding in bindings:
        yield binding, residency_now(binding, rules)


def would_violate(rules) -> list[tuple[StoreBinding, residency.ResidencyVerdict]]:
    """The live bindings `rules` would not allow (a preview)."""
    return [(b, verdict) for b, verdict in checked_bindings(rules) if not verdict.allowed]


def proposed_rules(
    *, replacing: ResidencyRule | None = None, proposal: residency.RuleView | None
) -> list[residency.RuleView]:
    """Every rule in force, with `replacing` swapped for `proposal` (or dropped)."""
    with system_scope():
        rules = [r for r in rule_views() if replacing is None or r.id != replacing.pk]
    return rules + ([proposal] if proposal is not None else [])


def rule_preview(
    *, replacing: ResidencyRule | None = None, **proposal
) -> list[tuple[StoreBinding, residency.ResidencyVerdict]]:
    """The live bindings a rule as proposed (the fields of rule_create), replacing
    `replacing` if given, would make non-compliant. Changes nothing."""
    return would_violate(
        proposed_rules(replacing=replacing, proposal=residency.RuleView.proposed(proposal))
    )


# --------------------------------------------------------------------------- migration checklist

DONE, MISSING, PREFERRED, NOT_NEEDED = "done", "missing", "preferred", "not_needed"

# The migration strategy of the persistence decision, its seven steps as it names them.
CHECKLIST_STEPS = (
    ("keep_runtime", "Keep the current runtime persistence intact"),
    ("low_risk_first", "Add vNext-backed stores only for low-risk module and management data"),
    ("benchmark_fixtures", "Add benchmark fixtures for workflow runtime query shapes"),
    (
        "contract_tests",
        "Add provider contract tests for locking, queues and append-heavy logs",
    ),
    (
        "physicalization",
        "Introduce physicalization policies for workflow instance and bookmark indexes",
    ),
    ("pilot", "Pilot one non-critical runtime-adjacent store"),
    (
        "hot_paths",
        "Migrate runtime hot paths only after benchmarks and contract tests pass across the "
        "supported providers (SQLite, SQL Server, PostgreSQL, MongoDB)",
    ),
)


def pilot_list() -> QuerySet[MigrationPilot]:
    return MigrationPilot.objects.select_related("store", "profile")


def latest_pilot(profile) -> MigrationPilot | None:
    """Step 6's record on `profile`: its latest pilot (of whichever store)."""
    return pilot_list().filter(profile=profile).order_by("-recorded_at", "-id").first()


def _pilot_state(pilot: MigrationPilot | None, profile) -> tuple[str, list[str], dict | None]:
    if pilot is None:
        return MISSING, [f"a pilot on profile {profile.slug}: none recorded"], None
    shown = {
        "store": pilot.store.slug,
        "profile": pilot.profile.slug,
        "started_at": pilot.started_at.isoformat(),
        "ended_at": pilot.ended_at.isoformat() if pilot.ended_at else None,
        "outcome": pilot.outcome,
        "run_reference": pilot.run_reference,
        "recorded_by": pilot.recorded_by,
    }
    if pilot.outcome == MigrationPilot.Outcome.SUCCEEDED:
        return DONE, [], shown
    what = "still running" if pilot.outcome == MigrationPilot.Outcome.RUNNING else "failed"
    return MISSING, [f"the pilot of {pilot.store.slug} on {profile.slug}: {what}"], shown


def migration_checklist(store, profile) -> dict:
    """The migration strategy's seven steps for `store` on `profile`, each with its
    state, what it lacks, and (step 6) the pilot it rests on, from the evidence in force
    and the bindings the scope sees. `verdict` is the strategy's: a runtime hot path is
    no_go until every step before it is done and step 7's evidence covers every
    supported provider; otherwise the workload verdict's decision."""
    workload = store.workload_class
    verdict = evaluate_profile(workload, profile)
    klass = verdict.persistence_class
    missing = list(verdict.missing)
    hot_path = workload in gating.HOT_PATHS

    def gaps(prefix):
        return [m for m in missing if m.startswith(prefix)]

    def state(needed: bool, lacking: list[str], preferred: bool = False) -> tuple[str, list]:
        if not needed:
            return (PREFERRED if lacking else DONE) if preferred else NOT_NEEDED, lacking
        return (MISSING if lacking else DONE), lacking

    by_provider = {}
    if hot_path:
        evidence = gating.Evidence.of(
            benchmarks=BenchmarkResult.objects.filter(
                query_shape__in=gating.runtime_shapes(workload)
            ),
            contracts=ContractTestResult.objects.all(),
        )
        by_provider = gating.provider_gaps(workload, evidence)
    pilot = latest_pilot(profile) if workload not in gating.LOW_RISK else None
    pilot_state = _pilot_state(pilot, profile) if workload not in gating.LOW_RISK else None
    states = {
        "low_risk_first": (
            (DONE, [f"{store.get_workload_class_display()}: low-risk module data"])
            if workload in gating.LOW_RISK
            else (NOT_NEEDED, [])
        ),
        "benchmark_fixtures": state(workload not in gating.LOW_RISK, gaps("benchmark")),
        "contract_tests": state(
            hot_path,
            sorted({m for lacking in by_provider.values() for m in lacking if "contract" in m}),
        ),
        "physicalization": state(
            workload == WorkloadClass.HOT_LOOKUP,
            gaps("physicalization policy"),
            preferred=workload == WorkloadClass.INSTANCE_QUERY,
        ),
        "pilot": pilot_state[:2] if pilot_state else (NOT_NEEDED, []),
        "hot_paths": state(
            hot_path,
            [m for lacking in by_provider.values() for m in lacking]
            + gaps("certification")
            + gaps("a specialised profile")
            + gaps("retention cleanup"),
        ),
    }
    before_last = [k for k, _ in CHECKLIST_STEPS[1:-1] if states[k][0] == MISSING]
    decision = verdict.decision
    reasons = list(verdict.reasons)
    if hot_path and (before_last or states["hot_paths"][0] == MISSING):
        decision = gating.NO_GO
        uncovered = [p for p, lacking in by_provider.items() if lacking]
        reasons.append(
            "A runtime hot path stays no-go until the steps before it are done ("
            + (", ".join(before_last) or "they are")
            + ") and step 7's evidence covers every supported provider"
            + (f" (not yet: {', '.join(uncovered)})." if uncovered else ".")
        )
    live = StoreBinding.objects.filter(
        store=store, profile=profile, status__in=LIVE_STATUSES
    ).exists()
    if hot_path and live and decision == gating.NO_GO:
        states["keep_runtime"] = (
            MISSING,
            [f"{store.slug} is bound on {profile.slug} while its migration is no-go"],
        )
    else:
        states["keep_runtime"] = (DONE, [])
    return {
        "store": store.slug,
        "profile": profile.slug,
        "persistence_class": klass,
        "decision": verdict.decision,
        "hot_path": hot_path,
        "verdict": decision,
        "reasons": reasons,
        "providers": {p: {"covered": not lacking} for p, lacking in by_provider.items()},
        "pilot": pilot_state[2] if pilot_state else None,
        "steps": [
            {
                "step": n,
                "key": key,
                "title": title,
                "state": states[key][0],
                "missing": states[key][1],
            }
            for n, (key, title) in enumerate(CHECKLIST_STEPS, start=1)
        ],
    }


def checklist_profiles(store) -> QuerySet[StoreProfile]:
    """The profiles a store's checklist is shown for: those it is or was bound on."""
    return StoreProfile.objects.filter(
        bindings__store=store, bindings__status__in=[*LIVE_STATUSES, Status.RETIRED]
    ).distinct()
