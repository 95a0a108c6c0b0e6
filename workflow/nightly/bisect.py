"""Bisection: the first bad version or commit of a library between a last good and a first bad,
found with repeated A/B runs at each step (the way Chromium's Pinpoint bisects a regression).

The algorithm knows nothing of how a candidate is built or measured: a Builder turns a candidate
(a version or a commit) into an executable, a Measurer runs two executables interleaved in pairs
of random order (drift of the machine hits both alike) and returns one sample per run and side.
workflow.nightly.candidates has the Go builders and the command and prototype measurers.

1. The endpoints first: bad against good must be decided slower (the interval of the ratio of
   medians bad/good lies above 1), else the result is "inconclusive: no regression between the
   endpoints" with how large a slowdown the interval still allows. Its estimate R is the
   regression the steps look for.
2. Binary search over the candidates between them. A step compares the middle candidate with
   the current last good: it is "bad" when the whole interval of mid/good lies beyond sqrt(R);
   else with the current first bad: it is "good" when the whole interval of mid/bad lies below
   1/sqrt(R). sqrt(R) is halfway from good to bad on the log scale. Why halfway, and not just
   "the interval excludes 1": a candidate then counts as bad only when most of the regression is
   confidently there already, so a small unrelated change earlier in the history (a 1 % drift
   that a long enough comparison would call significant) can never pull the search away from
   the change that made the regression; with one step in the history a wrong call needs an
   interval that misses the candidate's true ratio (1 or R) by half the regression, which the
   level below bounds. The price is power: the interval must be narrower than half the
   regression, so a small regression may end inconclusive, never with a wrong commit.
3. Undecided: more runs (doubling from --runs up to --max-runs, added to those measured, both
   comparisons); still undecided, the bisection stops "inconclusive" naming the remaining range
   (last good, first bad] as its bound.
4. first_bad is named only when it and last_good are adjacent candidates and both are decided.

Error control over the whole bisection (Bonferroni): every interval computed is one chance of a
wrong call; a bisection of n candidates makes at most ceil(log2(n - 1)) steps plus the endpoint
check, each with at most one interval per comparison and look. Each interval has level
1 - alpha / (that count), so the chance that any call is wrong is at most alpha (two-sided
intervals, one-sided calls: at most alpha / 2 in fact, a margin for the percentile bootstrap's
optimism at few runs). Intervals: stats.compare.ratio_of_medians with the percentile method of
the nightly's decisions (stats.regress.RATIO_METHOD).

A candidate that does not build, or whose runs fail, is skipped (git bisect's "skip"): the step
takes the nearest other candidate; when only skipped ones remain between last good and first
bad, the result is inconclusive and names them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

from stats.compare import FEW_RUNS_FOR_BOOTSTRAP, ratio_of_medians
from stats.regress import RATIO_METHOD
from workflow.files import read_json, write_json

SCHEMA: Final = 1
FOUND: Final = "found"
INCONCLUSIVE: Final = "inconclusive"
GOOD: Final = "good"
BAD: Final = "bad"
UNDECIDED: Final = "undecided"
NO_REGRESSION: Final = "no regression between the endpoints"


class Builder(Protocol):
    """Builds a candidate; raises CandidateFailed when it does not build."""

    def build(self, candidate: str) -> Path: ...


class Measurer(Protocol):
    """Runs a and b `runs` times each, interleaved in pairs of random order; one sample per run
    (higher is worse). Raises CandidateFailed naming the executable whose run failed."""

    def measure(self, a: Path, b: Path, runs: int) -> tuple[list[float], list[float]]: ...


class CandidateFailed(RuntimeError):
    """A candidate did not build, or its executable's run failed: what failed and why."""

    def __init__(self, what: str | Path, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = str(what)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Settings:
    """How much a bisection may measure and how sure its calls must be."""

    runs: int = 6  # runs per side at a step's first look
    max_runs: int = 24  # runs per side at most, per comparison of a step
    alpha: float = 0.05  # the chance of any wrong call over the whole bisection
    n_resamples: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.runs < FEW_RUNS_FOR_BOOTSTRAP:
            raise ValueError(
                f"runs: {self.runs}; expected at least {FEW_RUNS_FOR_BOOTSTRAP} per side (fewer "
                "give a bootstrap interval too narrow to trust)"
            )
        if self.max_runs < self.runs:
            raise ValueError(f"max_runs: {self.max_runs}; expected at least runs ({self.runs})")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha: {self.alpha}; expected a value in (0, 1)")

    @property
    def looks(self) -> list[int]:
        """Runs per side at each look of a comparison: runs, doubled up to max_runs."""
        out = [self.runs]
        while out[-1] < self.max_runs:
            out.append(min(2 * out[-1], self.max_runs))
        return out


def max_steps(n_candidates: int) -> int:
    """The steps a bisection of n candidates (both endpoints included) may take: the endpoint
    check, then one step per halving of the n - 1 gaps."""
    return 1 + math.ceil(math.log2(max(n_candidates - 1, 1)))


def level_per_interval(n_candidates: int, settings: Settings) -> float:
    """The level of every interval (module docstring): 1 - alpha / the most intervals."""
    looks = len(settings.looks)
    intervals = looks + 2 * looks * (max_steps(n_candidates) - 1)
    return 1.0 - settings.alpha / intervals


@dataclass
class _Comparison:
    """The samples of one comparison of a step (candidate b against a), added to look by look."""

    against: str
    samples_a: list[float] = field(default_factory=list)
    samples_b: list[float] = field(default_factory=list)


@dataclass
class Outcome:
    """What a bisection found, as the bisections document (schema 1) holds it."""

    candidates: list[str]
    steps: list[dict[str, Any]]
    status: str
    first_bad: str | None
    last_good: str | None
    bound: str | None
    remaining: list[str] | None  # (last good, first bad]: where the first bad lies, when known
    endpoint_ratio: float | None
    skipped: list[dict[str, str]]
    level: float
    settings: Settings
    wall_s: float

    def document(
        self,
        *,
        campaign: str | None,
        night_id: str | None,
        library: str,
        cell: str,
        metric: str,
    ) -> dict[str, Any]:
        """The bisections JSON document (schema 1), with what the schema leaves open: the
        remaining range, the skipped candidates, the level of every interval, the budget."""
        return {
            "schema": SCHEMA,
            "campaign": campaign,
            "night_id": night_id,
            "library": library,
            "cell": cell,
            "metric": metric,
            "good": self.candidates[0],
            "bad": self.candidates[-1],
            "candidates": self.candidates,
            "steps": self.steps,
            "status": self.status,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "bound": self.bound,
            "remaining": self.remaining,
            "endpoint_ratio": _rounded(self.endpoint_ratio),
            "skipped": self.skipped,
            "level": self.level,
            "alpha": self.settings.alpha,
            "runs": self.settings.runs,
            "max_runs": self.settings.max_runs,
            "seed": self.settings.seed,
            "wall_s": round(self.wall_s, 1),
        }


def _rounded(x: float | None, digits: int = 5) -> float | None:
    return round(x, digits) if x is not None and math.isfinite(x) else None


Progress = Callable[[str], None]


class _Bisection:
    """The state of one bisection: candidates, what is known of them, every step taken."""

    def __init__(
        self,
        candidates: Sequence[str],
        builder: Builder,
        measurer: Measurer,
        settings: Settings,
        progress: Progress,
    ) -> None:
        if len(candidates) < 2:
            raise ValueError(
                f"candidates: {list(candidates)}; expected at least the good and the bad one"
            )
        if len(set(candidates)) != len(candidates):
            raise ValueError(f"candidates: {list(candidates)}; each may appear only once")
        self.candidates = list(candidates)
        self.builder = builder
        self.measurer = measurer
        self.settings = settings
        self.progress = progress
        self.level = level_per_interval(len(candidates), settings)
        self.steps: list[dict[str, Any]] = []
        self.skipped: dict[int, str] = {}
        self.executables: dict[int, Path] = {}
        self.intervals = 0  # computed so far, each with its own seed

    def executable(self, index: int) -> Path:
        if index not in self.executables:
            self.progress(f"bisect: building {self.candidates[index]}")
            self.executables[index] = self.builder.build(self.candidates[index])
        return self.executables[index]

    def compare(self, comp: _Comparison, index: int, against: int, runs: int) -> dict[str, Any]:
        """Measure up to `runs` per side of candidate index against candidate against; the
        step's record (its decision is filled in by the caller)."""
        more = runs - len(comp.samples_b)
        if more > 0:
            a, b = self.executable(against), self.executable(index)
            got_a, got_b = self.measurer.measure(a, b, more)
            if len(got_a) != more or len(got_b) != more:
                raise ValueError(
                    f"measurer: {len(got_a)} and {len(got_b)} samples for {more} runs per side; "
                    "expected one sample per run"
                )
            comp.samples_a += [float(x) for x in got_a]
            comp.samples_b += [float(x) for x in got_b]
        self.intervals += 1
        ratio = ratio_of_medians(
            np.asarray(comp.samples_a),
            np.asarray(comp.samples_b),
            level=self.level,
            seed=[self.settings.seed, self.intervals],
            method=RATIO_METHOD,
            n_resamples=self.settings.n_resamples,
        )
        return {
            "candidate": self.candidates[index],
            "against": comp.against,
            "ratio": _rounded(ratio.estimate),
            "interval": [_rounded(ratio.low), _rounded(ratio.high)],
            "runs_per_side": len(comp.samples_b),
            "level": round(self.level, 6),
            "decision": UNDECIDED,
            "note": ratio.note,
        }

    def record(self, step: dict[str, Any], decision: str, threshold: float | None) -> None:
        step["decision"] = decision
        step["threshold"] = _rounded(threshold)
        self.steps.append(step)
        lo, hi = step["interval"]
        self.progress(
            f"bisect: {step['candidate'][:12]} against {step['against'][:12]}: ratio "
            f"{step['ratio']} [{lo}, {hi}] over {step['runs_per_side']} runs per side -> "
            f"{decision}"
        )


def _above(step: dict[str, Any], threshold: float) -> bool:
    lo = step["interval"][0]
    return lo is not None and lo > threshold


def _below(step: dict[str, Any], threshold: float) -> bool:
    hi = step["interval"][1]
    return hi is not None and hi < threshold


def bisect(
    candidates: Sequence[str],
    builder: Builder,
    measurer: Measurer,
    settings: Settings | None = None,
    progress: Progress = lambda _msg: None,
) -> Outcome:
    """Bisect candidates (oldest first; the first the last known good, the last the first
    known bad) for the first bad one; see the module docstring."""
    t0 = time.monotonic()
    run = _Bisection(candidates, builder, measurer, settings or Settings(), progress)
    status, bound, ratio = _endpoints(run)
    lo, hi = 0, len(run.candidates) - 1
    if status is None:
        assert ratio is not None
        status, bound, lo, hi = _search(run, ratio)
    found = status == FOUND
    remaining = None if ratio is None else run.candidates[lo + 1 : hi + 1]
    return Outcome(
        candidates=run.candidates,
        steps=run.steps,
        status=status,
        first_bad=run.candidates[hi] if found else None,
        last_good=run.candidates[lo] if found else None,
        bound=bound,
        remaining=remaining,
        endpoint_ratio=ratio,
        skipped=[{"candidate": run.candidates[i], "why": why} for i, why in run.skipped.items()],
        level=run.level,
        settings=run.settings,
        wall_s=time.monotonic() - t0,
    )


def _endpoints(run: _Bisection) -> tuple[str | None, str | None, float | None]:
    """(None, None, R) when bad is decided slower than good (R: bad/good); else (inconclusive,
    why, None)."""
    good, bad = 0, len(run.candidates) - 1
    comp = _Comparison(run.candidates[good])
    step: dict[str, Any] = {}
    try:
        for runs in run.settings.looks:
            step = run.compare(comp, bad, good, runs)
            if _above(step, 1.0) and step["ratio"] > 1.0:
                run.record(step, BAD, 1.0)
                return None, None, float(step["ratio"])
            run.record(step, UNDECIDED, 1.0)
    except CandidateFailed as exc:
        return INCONCLUSIVE, f"an endpoint could not be measured: {exc}", None
    hi = step["interval"][1]
    allows = (
        f"the interval allows a slowdown of at most {hi - 1:.1%}"
        if hi is not None and hi > 1
        else "the interval allows no slowdown"
        if hi is not None
        else "no interval"
    )
    return (
        INCONCLUSIVE,
        f"{NO_REGRESSION}: bad/good {step['ratio']} [{step['interval'][0]}, {hi}] over "
        f"{step['runs_per_side']} runs per side at level {run.level:.4f}; {allows}",
        None,
    )


def _pick(run: _Bisection, lo: int, hi: int) -> int | None:
    """The candidate strictly between lo and hi nearest their middle that is not skipped."""
    inside = [i for i in range(lo + 1, hi) if i not in run.skipped]
    if not inside:
        return None
    middle = (lo + hi) / 2
    return min(inside, key=lambda i: (abs(i - middle), i))


def _search(run: _Bisection, ratio: float) -> tuple[str, str | None, int, int]:
    """Binary search from the decided endpoints: (status, bound, last good, first bad)."""
    up = math.sqrt(ratio)
    lo, hi = 0, len(run.candidates) - 1
    steps_left = max_steps(len(run.candidates)) - 1
    while hi - lo > 1:
        mid = _pick(run, lo, hi)
        if mid is None:
            names = ", ".join(run.candidates[i] for i in range(lo + 1, hi))
            return (
                INCONCLUSIVE,
                f"the first bad is {run.candidates[hi]} or one of the candidates before it that "
                f"could not be built or run ({names}); last good {run.candidates[lo]}",
                lo,
                hi,
            )
        if steps_left == 0:
            return INCONCLUSIVE, _range_bound(run, lo, hi, "the step budget is spent"), lo, hi
        before = run.intervals
        try:
            decision, last = _step(run, mid, lo, hi, up)
        except CandidateFailed as exc:
            if run.intervals > before:
                steps_left -= 1  # its intervals were computed: they count against alpha
            if not _about(run, mid, exc):
                # An end of the step, decided before, failed now: nothing to skip.
                return INCONCLUSIVE, _range_bound(run, lo, hi, f"a run failed: {exc}"), lo, hi
            run.skipped[mid] = exc.detail
            run.progress(f"bisect: skipping {run.candidates[mid]}: {exc.detail[:300]}")
            continue
        steps_left -= 1
        if decision == BAD:
            hi = mid
        elif decision == GOOD:
            lo = mid
        else:
            return INCONCLUSIVE, _range_bound(run, lo, hi, _undecided(run, last, up)), lo, hi
    return FOUND, None, lo, hi


def _about(run: _Bisection, index: int, exc: CandidateFailed) -> bool:
    """Whether exc is about this candidate: its build, or a run of its executable."""
    exe = run.executables.get(index)
    return exc.what == run.candidates[index] or (exe is not None and exc.what == str(exe))


def _step(run: _Bisection, mid: int, lo: int, hi: int, up: float) -> tuple[str, dict[str, Any]]:
    """One step: mid against the last good (bad?), then against the first bad (good?), with
    more runs while neither decides. The decision and the last comparison's record."""
    vs_good = _Comparison(run.candidates[lo])
    vs_bad = _Comparison(run.candidates[hi])
    step: dict[str, Any] = {}
    for runs in run.settings.looks:
        step = run.compare(vs_good, mid, lo, runs)
        if _above(step, up):
            run.record(step, BAD, up)
            return BAD, step
        run.record(step, UNDECIDED, up)
        step = run.compare(vs_bad, mid, hi, runs)
        if _below(step, 1.0 / up):
            run.record(step, GOOD, 1.0 / up)
            return GOOD, step
        run.record(step, UNDECIDED, 1.0 / up)
    return UNDECIDED, step


def _undecided(run: _Bisection, step: dict[str, Any], up: float) -> str:
    return (
        f"{step['candidate']} stayed undecided after {step['runs_per_side']} runs per side "
        f"(against {step['against']}: {step['ratio']} [{step['interval'][0]}, "
        f"{step['interval'][1]}]; a call needs the whole interval beyond halfway, "
        f"{up:.4f} against the last good or {1 / up:.4f} against the first bad)"
    )


def _range_bound(run: _Bisection, lo: int, hi: int, why: str) -> str:
    n = hi - lo
    return (
        f"the first bad lies after {run.candidates[lo]} and no later than {run.candidates[hi]} "
        f"({n} candidate{'s' if n != 1 else ''}); {why}"
    )


def write_document(path: Path, doc: dict[str, Any]) -> Path:
    """Write a bisection document atomically, once: an existing file with other content is an
    error (the history store is append-only), the same content is left as it is."""
    if path.exists():
        if read_json(path) == doc:
            return path
        raise FileExistsError(
            f"{path}: exists with another bisection; bisection documents are written once "
            "(choose another --out)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json(path, doc, strict=True)
