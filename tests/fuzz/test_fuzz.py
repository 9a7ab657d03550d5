"""The fuzz campaign in the normal suite: the harness's own checks, the saved regression cases, a short run.

The short run's budget is ``ONNXCORE_FUZZ_SECONDS`` (15 s by default) and its seed ``ONNXCORE_FUZZ_SEED``
(0); a long campaign is ``tests/fuzz/campaign.py`` run as a script (see docs/fuzzing.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import campaign
import fuzz_worker as fw

CASE_FILES = sorted(campaign.CASES.glob("*.json"))


@pytest.fixture(scope="module")
def pool() -> Iterator[fw.Pool]:
    p = fw.Pool(alarm=10.0)
    yield p
    p.close()


@pytest.mark.parametrize(
    ("action", "verdict", "kind"),
    [
        ("ours", "refused", None),
        ("foreign", "failure", "foreign"),
        ("alloc", "failure", "memory"),
        ("rss", "failure", "rss"),
        ("crash", "failure", "crash"),
    ],
)
def test_the_harness_tells_each_way_of_failing(pool: fw.Pool, action: str, verdict: str, kind: str | None) -> None:
    got = pool.run({"target": "_selftest", "action": action})
    assert got[0] == verdict, got
    if kind is not None:
        assert got[1].startswith(kind + ":"), got
    # The worker is respawned after a failure and answers the next input.
    assert pool.run({"target": "_selftest", "action": "none"}) == ("accepted", "")


@pytest.mark.parametrize("action", ["hang", "spin"])
def test_the_harness_stops_a_hang_at_the_alarm(action: str) -> None:
    # "spin" computes forever (stopped when its CPU time reaches the alarm); "hang" sleeps (stopped by the
    # clock at WALL_FACTOR times the alarm).
    p = fw.Pool(alarm=1.0)
    try:
        got = p.run({"target": "_selftest", "action": action})
        assert got[0] == "failure" and got[1].startswith("hang:"), got
        assert p.run({"target": "_selftest", "action": "none"}) == ("accepted", "")
    finally:
        p.close()


def test_a_memory_error_wrapped_in_ours_is_a_failure() -> None:
    import onnxcore

    try:
        try:
            raise MemoryError
        except MemoryError as e:
            raise onnxcore.EvaluationError("node 'x' failed") from e
    except onnxcore.EvaluationError as e:
        verdict = fw.classify(e)
    assert verdict[0] == "failure" and verdict[1].startswith("memory:")


@pytest.mark.skipif(not CASE_FILES, reason="no saved regression cases")
@pytest.mark.parametrize("case", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_saved_case_replays_cleanly(pool: fw.Pool, case: Path) -> None:
    """Each saved case failed once (``found``); now it must be refused or accepted as ``expected`` says."""
    meta = campaign.json.loads(case.read_text())
    got = pool.run(campaign.load_case(case))
    if got[0] == "failure" and got[1].startswith("hang:"):
        got = pool.run(campaign.load_case(case))  # the campaign's rule: a hang is an input past the alarm twice
    assert got[0] != "failure", f"{case.name} (found: {meta['found']}): {got}"
    if got[0] == "skipped":  # the target's optional extra is not installed here (the batch target: dask)
        pytest.skip(str(got[1]))
    if meta.get("expected"):
        assert got[0] == meta["expected"], got


def test_short_campaign_finds_no_failure() -> None:
    seconds = float(os.environ.get("ONNXCORE_FUZZ_SECONDS", "15"))
    seed = int(os.environ.get("ONNXCORE_FUZZ_SEED", "0"))
    summary = campaign.campaign(seconds=seconds, seed=seed)
    print(summary.table())
    total = sum(c["inputs"] for c in summary.counts.values())
    assert total > 0
    assert not summary.failures, summary.table() + "\n" + "\n".join(f"{t}: {d}" for t, d in summary.failures)
