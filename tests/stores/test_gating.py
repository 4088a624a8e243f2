"""Workload gating: every workload class against every physical shape."""

import pytest

from apps.stores.gating import CONDITIONAL, GO, NO_GO, evaluate_workload
from apps.stores.models import ProfileCertification, StoreProfile

SHAPES = [choice for choice, _ in StoreProfile.Shape.choices]
EVIDENCE = ProfileCertification(certified_by="perf-team", benchmark_reference="BM-42")


def profile(shape, retention=True):
    return StoreProfile(
        slug=f"p-{shape}", engine="postgresql", shape=shape, provides_retention_cleanup=retention
    )


# (workload, shape, certified, retention cleanup) -> decision
CASES = (
    [(("catalog", shape, certified, True), GO) for shape in SHAPES for certified in (False, True)]
    + [(("hot_lookup", shape, False, True), NO_GO) for shape in SHAPES]
    + [(("hot_lookup", shape, True, True), CONDITIONAL) for shape in SHAPES]
    + [
        ((workload, "portable_documents", certified, retention), NO_GO)
        for workload in ("queue", "append_log")
        for certified in (False, True)
        for retention in (False, True)
    ]
    + [
        ((workload, shape, certified, retention), GO if certified and retention else NO_GO)
        for workload in ("queue", "append_log")
        for shape in SHAPES
        if shape != "portable_documents"
        for certified in (False, True)
        for retention in (False, True)
    ]
)


@pytest.mark.parametrize(("case", "decision"), CASES, ids=lambda v: str(v))
def test_every_workload_and_shape_pair_has_an_explained_verdict(case, decision):
    workload, shape, certified, retention = case
    verdict = evaluate_workload(
        workload, profile(shape, retention), EVIDENCE if certified else None
    )
    assert verdict.decision == decision
    assert verdict.reasons and all(reason.endswith(".") for reason in verdict.reasons)
    assert verdict.allows == (decision != NO_GO)
    if decision in (GO, CONDITIONAL) and workload != "catalog":
        assert verdict.evidence == "BM-42"  # the evidence that allowed it is named


def test_the_table_covers_every_pair():
    pairs = {(case[0], case[1]) for case, _ in CASES}
    workloads = ("catalog", "hot_lookup", "queue", "append_log")
    assert pairs == {(w, s) for w in workloads for s in SHAPES}
