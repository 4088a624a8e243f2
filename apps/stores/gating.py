"""Workload gating: may a store of this workload class run on this profile?

The platform's persistence evaluation, codified:
- catalog/metadata stores run on any profile (go);
- hot-lookup stores need a profile certified for hot lookups by recorded benchmark
  evidence: conditional on that evidence, no-go without it;
- queue and append-log stores never run on portable documents, and elsewhere need a
  profile certified for that workload which also provides retention cleanup.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from apps.stores.models import StoreProfile, WorkloadClass

GO, CONDITIONAL, NO_GO = "go", "conditional", "no_go"


@dataclass(frozen=True)
class WorkloadVerdict:
    decision: str  # go, conditional or no_go
    reasons: tuple[str, ...]
    evidence: str = ""  # the certification's benchmark reference, when one decided
    certification_id: int | None = None  # the certification the verdict relies on

    @property
    def allows(self) -> bool:
        return self.decision in (GO, CONDITIONAL)

    def as_dict(self) -> dict:
        return {**asdict(self), "reasons": list(self.reasons)}


def evaluate_workload(workload: str, profile: StoreProfile, certification=None) -> WorkloadVerdict:
    """`certification`: the profile's live certification for `workload`, or None."""
    label = WorkloadClass(workload).label
    shape = StoreProfile.Shape(profile.shape).label.lower()
    if workload == WorkloadClass.CATALOG:
        return WorkloadVerdict(GO, (f"{label} stores run on any profile.",))
    if workload == WorkloadClass.HOT_LOOKUP:
        if certification is None:
            return WorkloadVerdict(
                NO_GO,
                (f"Profile {profile.slug} has no benchmark evidence for hot lookups.",),
            )
        return WorkloadVerdict(
            CONDITIONAL,
            (
                f"Allowed on the evidence certified by {certification.certified_by}; "
                "it holds while the certification is not revoked.",
            ),
            evidence=certification.benchmark_reference,
            certification_id=certification.pk,
        )
    # Queues and append logs.
    if profile.shape == StoreProfile.Shape.PORTABLE_DOCUMENTS:
        return WorkloadVerdict(
            NO_GO, (f"{label} stores are refused on {shape}; they need a specialised profile.",)
        )
    reasons = []
    if certification is None:
        reasons.append(f"Profile {profile.slug} is not certified for {label.lower()} stores.")
    if not profile.provides_retention_cleanup:
        reasons.append(f"Profile {profile.slug} does not provide retention cleanup.")
    if reasons:
        return WorkloadVerdict(NO_GO, tuple(reasons))
    return WorkloadVerdict(
        GO,
        (f"Specialised profile certified for {label.lower()} stores, with retention cleanup.",),
        evidence=certification.benchmark_reference,
        certification_id=certification.pk,
    )
