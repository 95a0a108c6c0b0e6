"""Each library version a night measured against its predecessor, per metric: the "versions"
list of a night's decision (regressions.json, then data/history/<campaign>/verdicts/).

A night that follows the libraries measures, per transport, the pinned version, every version
published since the last night and the release before each (workflow/nightly/upstream.py);
version_verdicts() compares every measured version with the one before it in version order, in
the same context (prototype, transport, players, workload, parameters, profile), and words the
result as a user asks it: slower, faster, or no difference shown, with the bound the interval
still allows. A version that did not build is listed too, never dropped.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import polars as pl

from stats import power, regress
from stats.changepoints import version_key
from stats.findings import LEVEL, num
from stats.history import DEFAULT_MIN_EFFECT, min_effect_of

VERSION_METRICS: Final = (
    "rtt_net_p50_us", "server_cpu_cores", "server_cpu_us_per_msg", "server_instr_per_msg",
)  # fmt: skip
SLOWER: Final = "slower"
FASTER: Final = "faster"
NO_DIFFERENCE: Final = "no difference"
INCONCLUSIVE: Final = "inconclusive"
DOES_NOT_BUILD: Final = "does not build"
# Everything that makes two cells comparable but the version (cells of one context differ only
# by library version).
CONTEXT: Final = (
    "prototype", "transport", "library", "players", "workload", "params", "network_profile",
    "transport_options", "duration_s", "server_profiler",
)  # fmt: skip
# What a profiled cell's versions are compared on: under callgrind the server's code runs ~20-50x
# slower, so its RTT and CPU time are callgrind's, and only its instruction count is the
# library's.
PROFILED_METRICS: Final = ("server_instr_per_msg",)
_WORDS: Final = {regress.REGRESSION: SLOWER, regress.IMPROVEMENT: FASTER,
                 regress.NO_CHANGE: NO_DIFFERENCE}  # fmt: skip


def _bound(v: regress.CellVerdict) -> float | None:
    """The largest change the interval still allows (max |bound - 1|): "no difference shown,
    at most this much"."""
    if v.ci_low is None or v.ci_high is None:
        return None
    return max(abs(v.ci_low - 1.0), abs(v.ci_high - 1.0))


def _detectable(runs: pl.DataFrame, metric: str, before_cell: str, cell: str) -> float | None:
    """The smallest ratio of medians the two cells' runs detect with 80 % power at the 5 %
    level (stats.power), from their pooled run-to-run spread on the log scale."""
    sides = [
        runs.filter((pl.col("cell_id") == c) & (pl.col("status") == "ok"))[metric]
        .cast(pl.Float64).drop_nulls().to_numpy()
        for c in (before_cell, cell)
    ]  # fmt: skip
    ratio = power.two_sample_mde(*sides)
    return ratio if math.isfinite(ratio) else None


def _compared_on(context: Mapping[str, Any], metric: str, runs: pl.DataFrame, cells: Sequence[str]
                 ) -> bool:  # fmt: skip
    """Whether a pair of cells is compared on metric: a callgrind pair on PROFILED_METRICS only,
    and no pair on a metric neither of its cells measured (instructions without callgrind)."""
    if context.get("server_profiler") == "callgrind" and metric not in PROFILED_METRICS:
        return False
    return runs.filter(pl.col("cell_id").is_in(list(cells)))[metric].drop_nulls().len() > 0


def _pairs(ok: pl.DataFrame) -> list[tuple[dict[str, Any], str, str, str, str]]:
    """(context, predecessor's cell, its version, the version's cell, the version) for every
    version measured after another one in the same context, in version order."""
    keys = [k for k in CONTEXT if k in ok.columns]
    out = []
    for ctx, group in ok.group_by(keys, maintain_order=True):
        cells = group.select("cell_id", "library_release").unique()
        by_version = dict(zip(cells["library_release"], cells["cell_id"], strict=True))
        if len(by_version) != cells.height:  # two cells of one version: not one context
            continue
        order = sorted(by_version, key=version_key)
        context = dict(zip(keys, ctx, strict=True))
        for before, after in itertools.pairwise(order):
            out.append((context, by_version[before], before, by_version[after], after))
    return out


def version_verdicts(
    runs: pl.DataFrame,
    metrics: Sequence[str] = VERSION_METRICS,
    min_effect: float = DEFAULT_MIN_EFFECT,
    published: Mapping[tuple[str, str], str] | None = None,
    not_built: Sequence[Mapping[str, str]] = (),
) -> list[dict[str, Any]]:
    """Per version measured after another in its context, and per metric: the verdict against
    its predecessor (stats.regress.per_cell: ratio of medians version/predecessor, bootstrap
    interval, minimum practical effect, Benjamini-Hochberg across every pair of the night).
    published: (library, version) -> its publication time; not_built: {library, transport,
    version, predecessor, build_error} of versions that never ran."""
    need = {"cell_id", "status", "library_release"}
    if runs.height == 0 or not need <= set(runs.columns):
        pairs = []
    else:
        pairs = _pairs(runs.filter(pl.col("status") == "ok").drop_nulls("library_release"))
    out: list[dict[str, Any]] = []
    # A metric no run of the night measured (server_instr_per_msg without callgrind cells)
    # has no verdicts, rather than an inconclusive one per version.
    for metric in (m for m in metrics if m in runs.columns and runs[m].drop_nulls().len()):
        compared = [p for p in pairs if _compared_on(p[0], metric, runs, (p[1], p[3]))]
        # One comparison per pair, keyed by the version's cell: per_cell adjusts across them.
        base = pl.concat(
            [runs.filter(pl.col("cell_id") == b).with_columns(cell_id=pl.lit(c))
             for _, b, _, c, _ in compared] or [runs.clear()],
        )  # fmt: skip
        cand = runs.filter(pl.col("cell_id").is_in([c for _, _, _, c, _ in compared]))
        effect = min_effect_of(metric, min_effect)
        found = {v.cell_id: v for v in regress.per_cell(base, cand, metric, effect, LEVEL)}
        for context, before_cell, before, cell, version in compared:
            v = found.get(cell)
            detectable = _detectable(runs, metric, before_cell, cell)
            out.append(
                {
                    "prototype": context.get("prototype"),
                    "library": context.get("library"),
                    "transport": context.get("transport"),
                    "version": version,
                    "predecessor": before,
                    "published": (published or {}).get((str(context.get("library")), version)),
                    "cell": cell,
                    "predecessor_cell": before_cell,
                    "metric": metric,
                    "ratio": num(v.ratio) if v else None,
                    "interval": [num(v.ci_low), num(v.ci_high)] if v else [None, None],
                    "q": num(v.p_adjusted) if v else None,
                    "verdict": _WORDS.get(v.verdict, INCONCLUSIVE) if v else INCONCLUSIVE,
                    "bound": num(_bound(v)) if v else None,
                    # What this pair could see: the ratio its runs detect with 80 % power.
                    "detectable_ratio": num(detectable),
                    "min_effect": effect,
                    "note": v.note if v else "no ok runs on one side",
                    "confirmed": None,
                    "build_error": None,
                }
            )
    for nb in not_built:
        library, version = str(nb.get("library")), str(nb.get("version"))
        out.append(
            dict.fromkeys(
                (
                    "prototype",
                    "cell",
                    "predecessor_cell",
                    "metric",
                    "ratio",
                    "q",
                    "bound",
                    "note",
                    "detectable_ratio",
                    "min_effect",
                )
            )
            | {
                "library": library,
                "transport": nb.get("transport"),
                "version": version,
                "predecessor": nb.get("predecessor"),
                "published": (published or {}).get((library, version)),
                "interval": [None, None],
                "verdict": DOES_NOT_BUILD,
                "confirmed": None,
                "build_error": nb.get("build_error"),
            }
        )
    return out


def rerun_cells(versions: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the confirming re-run measures again for the versions found slower than their
    predecessor: both cells of each such pair (the re-run compares them afresh)."""
    slower = [v for v in versions if v["verdict"] == SLOWER and v["cell"]]
    return sorted({str(c) for v in slower for c in (v["cell"], v["predecessor_cell"])})


def confirm_versions(
    versions: Sequence[Mapping[str, Any]], rerun: pl.DataFrame, min_effect: float
) -> list[dict[str, Any]]:
    """versions with `confirmed` filled in for the slower ones: the re-run (a runs table
    holding both cells of each pair) finds the version slower than its predecessor again."""
    again = {
        (v["cell"], v["metric"]): v
        for v in version_verdicts(rerun, sorted({str(x["metric"]) for x in versions
                                                 if x["metric"]}), min_effect)
    }  # fmt: skip
    out = []
    for v in versions:
        if v["verdict"] != SLOWER:
            out.append(dict(v) | {"confirmed": False if v["cell"] else None})
            continue
        r = again.get((v["cell"], v["metric"]))
        out.append(
            dict(v)
            | {
                "confirmed": bool(r and r["verdict"] == SLOWER),
                "confirm_ratio": r["ratio"] if r else None,
                "confirm_interval": r["interval"] if r else None,
            }
        )
    return out
