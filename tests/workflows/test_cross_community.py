"""Musketeer's cross-community PageRank (testbed.workflows.community) on two generated
communities: its ranks, merged and unmerged, equal to a direct computation over the files."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.workflows import community, reference
from testbed.workflows.lowering import lower
from testbed.workloads.sql import file_splits
from tests.support.workflows import Runner


@pytest.fixture(scope="module")
def communities(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return community.generate(300, tmp_path_factory.mktemp("communities"), seed=2)


def test_the_communities_share_a_part(communities: tuple[Path, Path]) -> None:
    a, b = (set(p.read_text().splitlines()) for p in communities)
    assert 0.2 < len(a & b) / len(a | b) < 0.6


@pytest.mark.parametrize(("merge", "stages"), [(True, 15), (False, 32)], ids=["merged", "unmerged"])
def test_ranks_equal_a_direct_computation(
    communities: tuple[Path, Path], run_workflow: Runner, merge: bool, stages: int
) -> None:
    workflow = community.cross_community(*map(str, communities), rounds=3, splits=2).workflow(3, merge)
    assert len(lower(workflow, file_splits).stages) == stages
    ours = dict(run_workflow(workflow))
    theirs = community.reference(*communities, rounds=3)
    assert ours.keys() == theirs.keys() and len(theirs) > 100
    worst = max(abs(ours[node] / theirs[node] - 1) for node in theirs)
    assert worst <= reference.FLOAT_TOLERANCE, f"relative error {worst}"
    assert community.reference(*communities, rounds=2) != theirs, "a round short is caught"
