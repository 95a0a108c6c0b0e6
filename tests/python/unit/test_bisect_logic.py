"""The bisection's decisions (workflow.nightly.bisect) on synthetic samples: a clear step is found,
noise never names a commit, a small step is found or left inconclusive but never misplaced, the
runs stay within the budget, an earlier small change does not pull the search away from the
change that made the regression, candidates that do not build are skipped."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from workflow.nightly import bisect as bisection
from workflow.nightly.bisect import CandidateFailed, Settings

N = 16  # candidates, like the fixture library's 16 commits
NAMES = [f"c{i:02d}" for i in range(N)]


class FakeBuilder:
    """Builds every candidate but the broken ones; an executable is a path named after it."""

    def __init__(self, broken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.broken = broken
        self.built: list[str] = []

    def build(self, candidate: str) -> Path:
        if candidate in self.broken:
            raise CandidateFailed(candidate, "does not build: undefined: Mix")
        self.built.append(candidate)
        return Path("/builds") / candidate


class FakeMeasurer:
    """Log-normal samples around each candidate's true level (sigma: the runs' spread on the
    log scale), and every call recorded."""

    def __init__(self, levels: dict[str, float], sigma: float, seed: int) -> None:
        self.levels = levels
        self.sigma = sigma
        self.rng = np.random.default_rng(seed)
        self.calls: list[tuple[str, str, int]] = []

    def measure(self, a: Path, b: Path, runs: int) -> tuple[list[float], list[float]]:
        self.calls.append((a.name, b.name, runs))

        def draw(exe: Path) -> list[float]:
            noise = self.rng.normal(0.0, self.sigma, runs)
            return (self.levels[exe.name] * np.exp(noise)).tolist()

        return draw(a), draw(b)


def steps(*changes: tuple[int, float]) -> dict[str, float]:
    """Each candidate's true level: 1.0, times (1 + size) from each change's candidate on."""
    levels = {}
    for i, name in enumerate(NAMES):
        level = 1.0
        for at, size in changes:
            if i >= at:
                level *= 1.0 + size
        levels[name] = level
    return levels


def run(
    levels: dict[str, float],
    sigma: float,
    seed: int = 0,
    settings: Settings | None = None,
    broken: set[str] = frozenset(),  # type: ignore[assignment]
) -> tuple[bisection.Outcome, FakeMeasurer]:
    measurer = FakeMeasurer(levels, sigma, seed)
    settings = settings or Settings(runs=6, max_runs=12, seed=seed, n_resamples=4000)
    return bisection.bisect(NAMES, FakeBuilder(broken), measurer, settings), measurer


def consistent(outcome: bisection.Outcome, first_bad: int) -> None:
    """Every call agrees with the truth: nothing before first_bad bad, nothing from it good."""
    for step in outcome.steps:
        i = NAMES.index(step["candidate"])
        if step["decision"] == bisection.BAD:
            assert i >= first_bad, step
        if step["decision"] == bisection.GOOD:
            assert i < first_bad, step


def test_clear_step_is_found_in_four_steps() -> None:
    outcome, measurer = run(steps((9, 0.20)), sigma=0.02)
    assert outcome.status == bisection.FOUND
    assert (outcome.first_bad, outcome.last_good) == ("c09", "c08")
    assert outcome.remaining == ["c09"] and outcome.bound is None
    consistent(outcome, 9)
    decided = [s for s in outcome.steps if s["decision"] != bisection.UNDECIDED]
    # The endpoint check and one decision per halving of 15 gaps.
    assert len(decided) == 1 + 4
    assert outcome.steps[0]["candidate"] == "c15" and outcome.steps[0]["against"] == "c00"
    assert outcome.endpoint_ratio == pytest.approx(1.2, rel=0.05)
    assert all(runs == 6 for *_, runs in measurer.calls), "a clear step needs no more runs"


def test_noise_never_names_a_commit() -> None:
    """No change at all: every bisection stops at the endpoints, "no regression"."""
    for seed in range(30):
        outcome, _ = run(steps(), sigma=0.05, seed=seed)
        assert outcome.status == bisection.INCONCLUSIVE, seed
        assert outcome.first_bad is None and outcome.last_good is None
        assert outcome.bound is not None and outcome.bound.startswith(bisection.NO_REGRESSION)
        assert outcome.remaining is None
        assert len(outcome.steps) == len(Settings(runs=6, max_runs=12).looks)


def test_small_step_is_found_or_inconclusive_never_misplaced() -> None:
    """A 3 % step in 1 % noise with at most 12 runs a side: found, or stopped on the way (or at
    the endpoints), never elsewhere; an inconclusive range always holds the planted candidate."""
    ends: dict[str, int] = {"found": 0, "no regression": 0, "range": 0}
    for seed in range(30):
        outcome, measurer = run(steps((9, 0.03)), sigma=0.01, seed=seed)
        consistent(outcome, 9)
        assert outcome.first_bad in (None, "c09"), seed
        if outcome.status == bisection.FOUND:
            ends["found"] += 1
        elif outcome.remaining is None:
            ends["no regression"] += 1
        else:
            assert "c09" in outcome.remaining, (seed, outcome.bound)
            ends["range"] += 1
        assert all(runs <= 12 for *_, runs in measurer.calls)
    # Both ways to end occur over these seeds: the test reaches each of them.
    assert ends["found"] > 0 and ends["range"] > 0, ends


def test_undecided_step_stops_within_the_budget_and_names_the_range() -> None:
    settings = Settings(runs=4, max_runs=16, seed=3, n_resamples=4000)
    # A clear regression at the endpoints, and then candidates that sit halfway.
    levels = steps((5, 0.10), (11, 0.10))
    outcome, measurer = run(levels, sigma=0.04, seed=3, settings=settings)
    assert outcome.status == bisection.INCONCLUSIVE and outcome.first_bad is None
    assert outcome.bound is not None and "the first bad lies after" in outcome.bound
    assert outcome.remaining and set(outcome.remaining) & {"c05", "c11"}
    # Per comparison the runs added up never exceed max_runs a side.
    per_comparison: dict[tuple[str, str], int] = {}
    for a, b, runs in measurer.calls:
        per_comparison[(a, b)] = per_comparison.get((a, b), 0) + runs
    assert max(per_comparison.values()) <= 16
    assert max(s["runs_per_side"] for s in outcome.steps) <= 16
    assert [s["runs_per_side"] for s in outcome.steps[-2:]] == [16, 16]


def test_an_earlier_small_change_does_not_pull_the_search_away() -> None:
    """+5 % at c04, +15 % at c11: the halfway rule names c11, where most of the regression came."""
    outcome, _ = run(steps((4, 0.05), (11, 0.15)), sigma=0.01, seed=1)
    assert outcome.status == bisection.FOUND
    assert outcome.first_bad == "c11"


def test_a_candidate_that_does_not_build_is_skipped() -> None:
    outcome, _ = run(steps((9, 0.20)), sigma=0.02, broken={"c07"})
    assert outcome.status == bisection.FOUND and outcome.first_bad == "c09"
    assert outcome.skipped == [{"candidate": "c07", "why": "does not build: undefined: Mix"}]
    assert "c07" not in {s["candidate"] for s in outcome.steps}


def test_only_unbuildable_candidates_left_is_inconclusive() -> None:
    outcome, _ = run(steps((9, 0.20)), sigma=0.02, broken={"c08"})
    assert outcome.status == bisection.INCONCLUSIVE and outcome.first_bad is None
    assert outcome.remaining == ["c08", "c09"]
    assert outcome.bound is not None and "c08" in outcome.bound and "c09" in outcome.bound


def test_an_endpoint_that_does_not_build_is_inconclusive() -> None:
    outcome, _ = run(steps((9, 0.20)), sigma=0.02, broken={"c15"})
    assert outcome.status == bisection.INCONCLUSIVE
    assert outcome.bound is not None and "does not build" in outcome.bound


def test_adjacent_endpoints_need_only_the_endpoint_check() -> None:
    measurer = FakeMeasurer({"a": 1.0, "b": 1.3}, 0.02, 0)
    outcome = bisection.bisect(["a", "b"], FakeBuilder(), measurer, Settings(n_resamples=4000))
    assert (outcome.status, outcome.first_bad, outcome.last_good) == ("found", "b", "a")
    assert len(outcome.steps) == 1


def test_level_controls_the_error_over_every_interval() -> None:
    s = Settings(runs=6, max_runs=24, alpha=0.05)
    assert s.looks == [6, 12, 24]
    # 16 candidates: the endpoint check and 4 steps of two comparisons, 3 looks each.
    assert bisection.max_steps(16) == 5
    assert bisection.level_per_interval(16, s) == pytest.approx(1 - 0.05 / (3 + 2 * 3 * 4))
    assert Settings(runs=5, max_runs=12).looks == [5, 10, 12]
    with pytest.raises(ValueError, match="runs: 2"):
        Settings(runs=2)
    with pytest.raises(ValueError, match="max_runs"):
        Settings(runs=8, max_runs=4)


def test_a_measurer_must_return_one_sample_per_run() -> None:
    class Short(FakeMeasurer):
        def measure(self, a: Path, b: Path, runs: int) -> tuple[list[float], list[float]]:
            got_a, got_b = super().measure(a, b, runs)
            return got_a[:-1], got_b

    with pytest.raises(ValueError, match="one sample per run"):
        bisection.bisect(NAMES, FakeBuilder(), Short(steps(), 0.01, 0), Settings())


def test_document_is_the_schema_and_written_once(tmp_path: Path) -> None:
    outcome, _ = run(steps((9, 0.20)), sigma=0.02)
    doc = outcome.document(
        campaign="nightly", night_id="n1", library="lib", cell="cell-1", metric="cpu_s"
    )
    for key in ("schema", "campaign", "night_id", "library", "cell", "metric", "good", "bad",
                "candidates", "steps", "status", "first_bad", "last_good", "bound"):  # fmt: skip
        assert key in doc
    assert doc["schema"] == 1 and doc["good"] == "c00" and doc["bad"] == "c15"
    for step in doc["steps"]:
        assert set(step) >= {"candidate", "against", "ratio", "interval", "runs_per_side"}
        assert step["decision"] in ("good", "bad", "undecided")
        assert all(math.isfinite(x) for x in step["interval"])
    path = tmp_path / "bisections" / "b.json"
    bisection.write_document(path, doc)
    assert json.loads(path.read_text()) == doc
    bisection.write_document(path, doc)  # the same content again: left as it is
    with pytest.raises(FileExistsError, match="written once"):
        bisection.write_document(path, {**doc, "status": "inconclusive"})
    assert json.loads(path.read_text()) == doc
