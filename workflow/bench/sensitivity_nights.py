"""Nights drawn from measured rounds, decided by the nightly's own code: bench-sensitivity's
analysis (its runner is sensitivity.py).

The bench measures conditions (identical code twice, and planted regressions of known size) in
rounds, every condition once per round in a random order, as the nightly runs the versions of a
transport (workflow/campaign/order.py). A night is then `night_rounds` rounds drawn at random,
and its confirming re-run `confirm_rounds` other rounds of the same pool: the night's runs of the
baseline and the candidate condition are handed to the nightly's decision as two versions of one
library (stats.history.versions.version_verdicts: ratio of medians, bootstrap interval, Mann-
Whitney, minimum practical effect), and a "slower" verdict is confirmed or not by the re-run's
(confirm_versions), exactly as a real night's.

The nights drawn from one pool share runs: they estimate how often a night decides this way under
the noise of the hour the pool was measured in, not across days; the record says how many rounds
the pool held. Runs flagged for interference are left out of the pool, as the nightly leaves them
out of its decisions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from stats import power
from stats.compare import ratio_of_medians
from stats.history import DEFAULT_MIN_EFFECT
from stats.history.versions import SLOWER, confirm_versions, version_verdicts

NIGHT_ROUNDS = 6  # the nightly's repetitions per cell
CONFIRM_ROUNDS = 6  # and its confirming re-run's
# The two sides of a drawn night, as the decision sees them: two releases of one library.
BASELINE_VERSION, CANDIDATE_VERSION = "v1.0.0", "v1.0.1"
# condition -> round -> the metric's value of that condition's run in that round
Pool = Mapping[str, Mapping[int, float]]


@dataclass(frozen=True, slots=True)
class Comparison:
    """One decision the bench draws nights of: candidate against baseline on metric; planted_pct
    None for identical code (A/A), else the planted regression's intended size."""

    name: str
    metric: str
    baseline: str
    candidate: str
    planted_pct: float | None
    profiler: str | None = None


def _frame(
    values: Mapping[str, Sequence[float]], metric: str, profiler: str | None
) -> pl.DataFrame:
    """The runs table the nightly's decision reads: one cell per version, one context."""
    rows = [
        {"cell_id": version, "run_id": f"r{k}", "status": "ok", "prototype": "reference",
         "transport": "tcp", "library": "bench", "library_release": version, "players": 0,
         "workload": "active", "server_profiler": profiler, metric: float(v)}
        for version, vals in values.items()
        for k, v in enumerate(vals, 1)
    ]  # fmt: skip
    return pl.DataFrame(rows, schema_overrides={"server_profiler": pl.String})


def paired_rounds(pool: Pool, a: str, b: str) -> list[int]:
    """Rounds in which both conditions have a value (finite and positive)."""
    ok = [
        k
        for k in sorted(set(pool.get(a, {})) & set(pool.get(b, {})))
        if all(math.isfinite(pool[c][k]) and pool[c][k] > 0 for c in (a, b))
    ]
    return ok


def decide_night(
    pool: Pool, c: Comparison, night: Sequence[int], confirm: Sequence[int]
) -> tuple[bool, bool]:
    """(flagged, confirmed) of one night: its rounds, then the re-run's."""

    def frame(rounds: Sequence[int]) -> pl.DataFrame:
        return _frame(
            {
                BASELINE_VERSION: [pool[c.baseline][k] for k in rounds],
                CANDIDATE_VERSION: [pool[c.candidate][k] for k in rounds],
            },
            c.metric,
            c.profiler,
        )

    found = [v for v in version_verdicts(frame(night), (c.metric,)) if v["metric"] == c.metric]
    if not found or found[0]["verdict"] != SLOWER:
        return False, False
    confirmed = confirm_versions(found, frame(confirm), DEFAULT_MIN_EFFECT)
    return True, bool(confirmed[0]["confirmed"])


def draw_nights(
    pool: Pool,
    c: Comparison,
    nights: int,
    seed: int,
    night_rounds: int = NIGHT_ROUNDS,
    confirm_rounds: int = CONFIRM_ROUNDS,
) -> dict[str, Any]:
    """`nights` nights of comparison c drawn from the pool: the share flagged and the share
    confirmed; a note instead when the pool holds too few rounds."""
    rounds = paired_rounds(pool, c.baseline, c.candidate)
    out: dict[str, Any] = {
        "comparison": c.name,
        "metric": c.metric,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "planted_pct": c.planted_pct,
        "pool_rounds": len(rounds),
        "night_rounds": night_rounds,
        "confirm_rounds": confirm_rounds,
        "nights": 0,
        "flagged": 0,
        "confirmed": 0,
        "flagged_share": None,
        "confirmed_share": None,
        "note": None,
    }
    if len(rounds) < night_rounds + confirm_rounds:
        out["note"] = (
            f"{len(rounds)} usable rounds: a night and its re-run need "
            f"{night_rounds + confirm_rounds}"
        )
        return out
    rng = np.random.default_rng(seed)
    flagged = confirmed = 0
    for _ in range(nights):
        drawn = [int(k) for k in rng.permutation(rounds)]
        f, cf = decide_night(
            pool, c, drawn[:night_rounds], drawn[night_rounds : night_rounds + confirm_rounds]
        )
        flagged += f
        confirmed += cf
    out.update(nights=nights, flagged=flagged, confirmed=confirmed)
    out.update(flagged_share=flagged / nights, confirmed_share=confirmed / nights)
    return out


def planted_size(pool: Pool, baselines: Sequence[str], planted: str) -> dict[str, Any]:
    """The planted change as measured: median(planted) / median(baselines' runs) - 1, in per
    cent, with its bootstrap interval (stats.compare.ratio_of_medians)."""
    base = [v for b in baselines for v in pool.get(b, {}).values() if math.isfinite(v)]
    cand = [v for v in pool.get(planted, {}).values() if math.isfinite(v)]
    if len(base) < 2 or len(cand) < 2:
        return {"increase_pct": None, "low_pct": None, "high_pct": None, "runs": len(cand)}
    r = ratio_of_medians(base, cand, method="percentile", n_resamples=4000)
    return {
        "increase_pct": round((r.estimate - 1) * 100, 2),
        "low_pct": round((r.low - 1) * 100, 2),
        "high_pct": round((r.high - 1) * 100, 2),
        "runs": len(cand),
        "baseline_runs": len(base),
    }


def _pct(ratio: float) -> float | None:
    return round((ratio - 1) * 100, 2) if math.isfinite(ratio) else None


def detectable(pool: Pool, a: str, b: str, n: int = NIGHT_ROUNDS) -> dict[str, Any]:
    """What a night of n runs per side sees on the pair of identical conditions a, b: the
    minimum detectable change (80 % power, 5 % level) from the runs' spread, unpaired (as the
    decision tests) and paired by round (as the rounds would allow), with the log spreads."""
    rounds = paired_rounds(pool, a, b)
    va = np.array([pool[a][k] for k in rounds])
    vb = np.array([pool[b][k] for k in rounds])
    sd = power.log_sd(np.r_[va, vb])
    sd_diff = float(np.std(np.log(vb / va), ddof=1)) if len(rounds) >= 2 else math.nan
    return {
        "rounds": len(rounds),
        "log_sd": round(sd, 5) if math.isfinite(sd) else None,
        "log_sd_paired_diff": round(sd_diff, 5) if math.isfinite(sd_diff) else None,
        "mde_pct": _pct(power.minimum_detectable_ratio(sd, n, n)),
        "mde_paired_pct": _pct(power.paired_minimum_detectable_ratio(sd_diff, n)),
    }


def spread_mde(pool: Pool, condition: str, n: int = NIGHT_ROUNDS) -> dict[str, Any]:
    """The detectable change (unpaired, n runs against n) from one condition's own spread."""
    sd = power.log_sd(list(pool.get(condition, {}).values()))
    return {
        "runs": len(pool.get(condition, {})),
        "log_sd": round(sd, 5) if math.isfinite(sd) else None,
        "mde_pct": _pct(power.minimum_detectable_ratio(sd, n, n)),
    }


def noise_parts(pool: Pool, lan: Sequence[str], emulated: str) -> dict[str, Any]:
    """Which part of RTT p50's run-to-run spread is whose, from log spreads: the machine and the
    prototype together (the lan cells: no emulator), and the emulator's own (the spread the
    emulated cell adds, sqrt(emulated^2 - lan^2))."""
    lan_vals = [v for c in lan for v in pool.get(c, {}).values()]
    emu_vals = list(pool.get(emulated, {}).values())
    sd_lan, sd_emu = power.log_sd(lan_vals), power.log_sd(emu_vals)
    extra = math.sqrt(max(0.0, sd_emu**2 - sd_lan**2)) if math.isfinite(sd_emu + sd_lan) else None
    lan_med = round(statistics.median(lan_vals), 1) if lan_vals else None
    emu_med = round(statistics.median(emu_vals), 1) if emu_vals else None
    return {
        "lan_log_sd": round(sd_lan, 5) if math.isfinite(sd_lan) else None,
        "emulated_log_sd": round(sd_emu, 5) if math.isfinite(sd_emu) else None,
        "emulator_log_sd": round(extra, 5) if extra is not None else None,
        "lan_median_us": lan_med,
        "emulated_median_us": emu_med,
        # The spread in µs (log sd x median): whether the noise is a share of the RTT or a
        # number of µs whatever the RTT.
        "lan_spread_us": _us(sd_lan, lan_med),
        "emulated_spread_us": _us(sd_emu, emu_med),
    }


def _us(log_sd: float, median: float | None) -> float | None:
    return round(log_sd * median, 1) if median is not None and math.isfinite(log_sd) else None


def runs_needed(log_sd: float | None, target_pct: float) -> int | None:
    """Runs per side at which the unpaired decision would detect target_pct at 80 % power:
    how far a target is from this machine's noise, in runs."""
    if log_sd is None or not math.isfinite(log_sd) or log_sd <= 0:
        return None
    for n in range(2, 10_001):
        if power.minimum_detectable_ratio(log_sd, n, n) - 1 <= target_pct / 100:
            return n
    return None
