"""Re-analysis of Net-Celerity's committed raw data (Stroiou 2024), with the statistics it lacked.

    python -m report.reanalysis [--data data/external/net-celerity]
                                [--results data/results/net-celerity-reanalysis]
                                [--out report/_output/net-celerity-reanalysis/index.html]
                                [--pdf FILE.pdf]

Steps: import the raw data with stats.importers.netcelerity; write the importer's samples, runs
and resources tables (Parquet) and the small figure tables (CSV, units in the column names) plus
findings.json into --results, every file atomically; render report/net-celerity.qmd with
report.render. All data shaping happens here: the .qmd only reads these tables and draws.

What can be estimated from these data, and what cannot:

- Every configuration (prototype, workload, player count) ran once. There is no run-to-run
  variation to estimate, so no between-run interval exists for any single configuration; the
  tables say so in a ``note`` column rather than showing a zero-width interval.
- Within one run, the uncertainty of a statistic over time can be estimated: a moving-block
  bootstrap (Kunsch 1989) resamples blocks of consecutive seconds (with all samples in them), so
  the autocorrelation of Mirror's smoothed RTT within a block is kept. Such an interval is
  labelled "within-run": it says how well 120 s pin down that one run, not how a repeated run
  would differ (which is usually the larger source of variation, Kalibera & Jones 2013).
- Across player counts: an OLS line per prototype (stats.scaling.fit, HC3 slope intervals; the
  six single runs per line stand in for replication, so lack of fit counts as noise) and the
  player count where the run median crosses 50/75/100 ms (stats.scaling.crossing, plus an
  interval that propagates the within-run bootstrap draws through the same interpolation).
- Warm-up: their RTT figures pooled all rows (ramp-up included); their system-log plots kept
  the last 120 s (``sleep 5`` after the last client, then the 120 s benchmark: the window starts
  NET_CELERITY_CUT_S after the last client was started). The importer's t_s = 0 is that window's
  start. MSER-5 (stats.warmup.mser5) on per-second medians is the data-driven alternative.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from report.render import RenderError, render
from stats.blockboot import WithinRun, block_bootstrap_mean, block_bootstrap_quantile
from stats.importers import ImportResult, write_tables
from stats.importers.netcelerity import SOURCE, import_dir
from stats.scaling import crossing, first_crossing, fit, percentile_bounds
from stats.warmup import NET_CELERITY_CUT_S, mser5, per_second
from workflow.campaign import records

FloatArray = npt.NDArray[np.float64]

REPO: Final = Path(__file__).resolve().parents[1]
DEFAULT_DATA: Final = REPO / "data" / "external" / "net-celerity"
DEFAULT_RESULTS: Final = REPO / "data" / "results" / "net-celerity-reanalysis"
DEFAULT_OUT: Final = REPO / "report" / "_output" / "net-celerity-reanalysis" / "index.html"
QMD: Final = Path(__file__).with_name("net-celerity.qmd")

LEVEL: Final = 0.95
N_RESAMPLES: Final = 2000
SEED: Final = 0
QUANTILES: Final = (5, 25, 50, 75, 95, 99)  # the box-style summary of Fig 5.1 (percent)
# The thesis's thresholds (section 5.3): FPS players notice latency at 50 ms, their accuracy
# halves beyond 75 ms, third-person RPG and racing players notice about 100 ms.
THRESHOLDS_MS: Final = {
    50.0: "FPS: latency noticed",
    75.0: "FPS: accuracy halved",
    100.0: "RPG and racing: latency noticed",
}
# Mirror stamps pings with frame time and runs headless at targetFrameRate = sendRate = 60, so
# its RTT comes in whole 60 FPS frames (anchors 1.6, 1.8); the logs print it with 2 decimals.
FRAME_MS: Final = 1000.0 / 60.0
FRAME_TOLERANCE_MS: Final = 0.05
RTT_RESOLUTION_MS: Final = 0.01  # PlayerLogging.cs formats the RTT with F2
HISTOGRAM_BIN_MS: Final = 0.1
HISTOGRAM_RANGE_MS: Final = (10.0, 110.0)

LABELS: Final = {
    ("mirror", "kcp"): "Mirror KCP",
    ("mirror", "telepathy"): "Mirror Telepathy",
    ("nfe", "utp"): "NFE (UTP)",
}
WORKLOAD_LABELS: Final = {
    "idle": "workload 1: idle",
    "active": "workload 2: active (input traces)",
}
WITHIN_RUN_NOTE: Final = (
    "one run per configuration: no between-run interval; low/high are a within-run "
    "moving-block bootstrap over seconds, which does not cover run-to-run variation"
)


# -- shaping functions (pure; tested on synthetic data) ----------------------------------------


@dataclass(frozen=True, slots=True)
class FrameFloor:
    """How strongly RTT values sit on whole frames."""

    samples: int
    frac_on_frame_multiple: float  # within tolerance of k * frame, k >= 1
    frac_at_floor: float  # within tolerance of one frame
    rtt_min_ms: float
    rtt_mode_ms: float  # the most common value


def on_frame_multiple(
    rtt_ms: npt.ArrayLike, frame_ms: float = FRAME_MS, tolerance_ms: float = FRAME_TOLERANCE_MS
) -> npt.NDArray[np.bool_]:
    """Mask: at or within tolerance_ms of a whole multiple (>= 1) of frame_ms."""
    v = np.asarray(rtt_ms, dtype=np.float64)
    k = np.maximum(np.rint(v / frame_ms), 1.0)
    # 1e-9: the logs' decimal values (16.67 for 16.666...) are not exact in binary
    with np.errstate(invalid="ignore"):
        return np.asarray(np.abs(v - k * frame_ms) <= tolerance_ms + 1e-9, dtype=bool)


def frame_floor(
    rtt_ms: npt.ArrayLike, frame_ms: float = FRAME_MS, tolerance_ms: float = FRAME_TOLERANCE_MS
) -> FrameFloor:
    """The quantisation of one run's RTT values (non-finite values are ignored)."""
    v = np.asarray(rtt_ms, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return FrameFloor(0, math.nan, math.nan, math.nan, math.nan)
    values, counts = np.unique(v, return_counts=True)
    at_floor = np.abs(v - frame_ms) <= tolerance_ms + 1e-9
    return FrameFloor(
        int(v.size),
        float(np.mean(on_frame_multiple(v, frame_ms, tolerance_ms))),
        float(np.mean(at_floor)),
        float(v.min()),
        float(values[np.argmax(counts)]),
    )


def expected_fraction_unquantised(
    frame_ms: float = FRAME_MS,
    tolerance_ms: float = FRAME_TOLERANCE_MS,
    resolution_ms: float = RTT_RESOLUTION_MS,
    frames: int = 600,
) -> float:
    """Share of values within tolerance of a frame multiple if values spread evenly: the share
    of the printable values (resolution_ms apart) over ``frames`` frames that are. Counted, not
    2 * tolerance / frame, because the frame multiples mostly fall between printable values
    (16.666... has 10 printable values within 0.05 ms, 50.00 has 11)."""
    steps = np.arange(
        round(frame_ms / resolution_ms), round((frames + 1) * frame_ms / resolution_ms)
    )
    return float(np.mean(on_frame_multiple(steps * resolution_ms, frame_ms, tolerance_ms)))


def by_second(t_s: npt.ArrayLike, values: npt.ArrayLike) -> pl.DataFrame:
    """Per 1-s bin [s, s + 1): median, SD (population, as the thesis's equation 5.1) and count."""
    frame = pl.DataFrame(
        {
            "t_s": np.asarray(t_s, dtype=np.float64),
            "v": np.asarray(values, dtype=np.float64),
        }
    ).filter(pl.col("t_s").is_finite() & pl.col("v").is_finite())
    return (
        frame.with_columns(pl.col("t_s").floor().alias("second"))
        .group_by("second")
        .agg(
            pl.col("v").median().alias("median"),
            pl.col("v").std(ddof=0).alias("sd"),
            pl.len().alias("samples"),
        )
        .sort("second")
    )


def histogram_share(values: npt.ArrayLike, bin_width: float, lo: float, hi: float) -> pl.DataFrame:
    """Share (%) of all values in each bin [k - 1/2, k + 1/2) * bin_width, for the bin centres
    k * bin_width in [lo, hi)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return pl.DataFrame(schema={"bin_ms": pl.Float64, "share_pct": pl.Float64})
    # 1e-6 of a bin: decimal values on a bin edge (24.65 / 0.1 = 246.4999...) go up, as the
    # half-open bins say, so every bin holds the same number of printable values.
    k = np.floor(v / bin_width + 0.5 + 1e-6)
    inside = (k * bin_width >= lo - 1e-9) & (k * bin_width < hi - 1e-9)
    ks, counts = np.unique(k[inside], return_counts=True)
    return pl.DataFrame(
        {"bin_ms": np.round(ks * bin_width, 6), "share_pct": 100.0 * counts / v.size}
    )


# -- formatting of the finding sentences -------------------------------------------------------


def num(x: float | None, digits: int = 2) -> str:
    """A number with fixed decimals for sentences; "n/a" for a missing one."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}f}"


def interval(low: float | None, high: float | None, digits: int = 2) -> str:
    return f"[{num(low, digits)}, {num(high, digits)}]"


def _finite(x: Any) -> float | None:
    """A finite float or None (for tables and JSON)."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


# -- the tables ----------------------------------------------------------------------------------


@dataclass
class Shaped:
    """Every figure table (CSV) and the findings document."""

    tables: dict[str, pl.DataFrame]
    findings: dict[str, Any]


def _run_info(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per run: ids and the labels the figures use."""
    return runs.select(
        "cell_id",
        "run_id",
        "block",
        "workload",
        "prototype",
        "transport",
        "players",
        "duration_s",
        pl.struct("prototype", "transport")
        .map_elements(
            lambda s: LABELS.get(
                (s["prototype"], s["transport"]), f"{s['prototype']} {s['transport']}"
            ),
            return_dtype=pl.String,
        )
        .alias("label"),
        pl.col("workload")
        .replace_strict(WORKLOAD_LABELS, default=pl.col("workload"))
        .alias("workload_label"),
    )


def _rtt_tables(
    samples: pl.DataFrame, info: pl.DataFrame, n_resamples: int, seed: int
) -> tuple[dict[str, pl.DataFrame], dict[str, dict[str, WithinRun]]]:
    """rtt_by_run, warmup, frame_floor, rtt_by_second and rtt_histogram; plus each run's
    within-run p50/p95 bootstrap (for the crossings)."""
    rows_run: list[dict[str, Any]] = []
    rows_warm: list[dict[str, Any]] = []
    rows_floor: list[dict[str, Any]] = []
    second_frames: list[pl.DataFrame] = []
    within: dict[str, dict[str, WithinRun]] = {}
    by_cell = samples.partition_by("cell_id", as_dict=True) if samples.height else {}
    expected = expected_fraction_unquantised()
    for i, row in enumerate(info.sort("block", "label", "players").iter_rows(named=True)):
        part = by_cell.get((row["cell_id"],))
        if part is None:
            continue  # DOTS-NFE: no RTT results stored (a dataset flaw)
        ids = {k: row[k] for k in ("cell_id", "run_id", "workload_label", "label", "players")}
        t = part.get_column("t_s").to_numpy()
        rtt_ms = part.get_column("rtt_us").to_numpy() / 1000.0
        duration_s = float(row["duration_s"] or 0.0)  # the window: 0 <= t_s < duration_s
        in_win = (t >= 0) & (t < duration_s)
        win = rtt_ms[in_win]
        qs = np.percentile(win, QUANTILES, method="linear")
        p50 = block_bootstrap_quantile(t, rtt_ms, 0.5, 0, duration_s, n_resamples, seed + i)
        p95 = block_bootstrap_quantile(t, rtt_ms, 0.95, 0, duration_s, n_resamples, seed + i)
        within[row["cell_id"]] = {"p50": p50, "p95": p95}
        rows_run.append(
            {
                **ids,
                "samples": int(win.size),
                **{f"rtt_p{q}_ms": float(x) for q, x in zip(QUANTILES, qs, strict=True)},
                "rtt_min_ms": float(win.min()),
                "rtt_max_ms": float(win.max()),
                "rtt_p50_low_ms": p50.low,
                "rtt_p50_high_ms": p50.high,
                "rtt_p95_low_ms": p95.low,
                "rtt_p95_high_ms": p95.high,
                "block_s": p50.block,
                "note": "; ".join(x for x in (WITHIN_RUN_NOTE, p50.note) if x),
            }
        )

        # Warm-up: pooled (their RTT figures), fixed window (their system-log rule), MSER-5.
        seconds, medians = per_second(t, rtt_ms)
        cut = mser5(medians, step_s=1.0)
        mser_t = float(seconds[0] + (cut.cut_s or 0.0))
        keep_mser = (t >= mser_t) & (t < duration_s)
        first_rows = part.group_by("player").agg(pl.col("t_s").min()).get_column("t_s")
        pooled = float(np.percentile(rtt_ms, 50, method="linear"))
        fixed = float(qs[QUANTILES.index(50)])
        rows_warm.append(
            {
                **ids,
                "first_row_t_s": float(t.min()),
                "last_join_t_s": float(first_rows.max()),
                "last_client_started_t_s": -NET_CELERITY_CUT_S,
                "fixed_cut_t_s": 0.0,
                "mser_cut_t_s": mser_t,
                "mser_second_half": cut.second_half,
                "mser_note": cut.reason,
                "samples_pooled": int(rtt_ms.size),
                "samples_fixed": int(win.size),
                "samples_mser": int(keep_mser.sum()),
                "rtt_p50_pooled_ms": pooled,
                "rtt_p50_fixed_ms": fixed,
                "rtt_p50_mser_ms": float(np.percentile(rtt_ms[keep_mser], 50, method="linear")),
                "rtt_p50_fixed_low_ms": p50.low,
                "rtt_p50_fixed_high_ms": p50.high,
                "pooled_minus_fixed_ms": pooled - fixed,
            }
        )

        ff = frame_floor(rtt_ms)
        rows_floor.append(
            {
                **ids,
                "samples": ff.samples,
                "frame_ms": FRAME_MS,
                "tolerance_ms": FRAME_TOLERANCE_MS,
                "frac_on_frame_multiple": ff.frac_on_frame_multiple,
                "frac_at_floor": ff.frac_at_floor,
                "expected_frac_unquantised": expected,
                "rtt_min_ms": ff.rtt_min_ms,
                "rtt_mode_ms": ff.rtt_mode_ms,
            }
        )
        sec = by_second(t, rtt_ms)
        second_frames.append(
            sec.select(
                *[pl.lit(v).alias(k) for k, v in ids.items()],
                pl.col("second").alias("t_s"),
                pl.col("median").alias("rtt_p50_ms"),
                pl.col("sd").alias("rtt_sd_ms"),
                "samples",
            )
        )
    tables = {
        "rtt_by_run": pl.DataFrame(rows_run),
        "warmup": pl.DataFrame(rows_warm),
        "frame_floor": pl.DataFrame(rows_floor),
        "rtt_by_second": pl.concat(second_frames) if second_frames else pl.DataFrame(),
    }
    hist_frames = []
    if samples.height:
        groups = samples.join(info.select("cell_id", "label", "workload_label"), on="cell_id")
        for (label, wl), g in sorted(
            groups.partition_by("label", "workload_label", as_dict=True).items()
        ):
            h = histogram_share(
                g.get_column("rtt_us").to_numpy() / 1000.0, HISTOGRAM_BIN_MS, *HISTOGRAM_RANGE_MS
            )
            hist_frames.append(
                h.select(pl.lit(label).alias("label"), pl.lit(wl).alias("workload_label"), "*")
            )
    tables["rtt_histogram"] = pl.concat(hist_frames) if hist_frames else pl.DataFrame()
    return tables, within


def _resource_tables(
    resources: pl.DataFrame, runs: pl.DataFrame, info: pl.DataFrame, n_resamples: int, seed: int
) -> dict[str, pl.DataFrame]:
    """server_cpu, server_memory and network: per run, the per-sample distribution in the window
    (0 <= t_s <= duration_s) and the window mean with its within-run interval."""
    cpu_rows: list[dict[str, Any]] = []
    mem_rows: list[dict[str, Any]] = []
    net_rows: list[dict[str, Any]] = []
    win = resources.join(info.select("cell_id", "duration_s"), on="cell_id").filter(
        (pl.col("t_s") >= 0) & (pl.col("t_s") <= pl.col("duration_s"))
    )
    by_cell = win.partition_by("cell_id", as_dict=True) if win.height else {}
    peak = dict(zip(runs["cell_id"], runs["server_rss_bytes"], strict=True))
    qs = (5, 25, 50, 75, 95)

    def summary(x: FloatArray, name: str, s: int) -> dict[str, Any]:
        m = block_bootstrap_mean(x, n_resamples, s)
        out: dict[str, Any] = {
            f"{name}_mean": m.estimate,
            f"{name}_mean_low": m.low,
            f"{name}_mean_high": m.high,
        }
        if x.size:
            p = np.percentile(x, qs, method="linear")
            out |= {f"{name}_p{q}": float(v) for q, v in zip(qs, p, strict=True)}
        out |= {"samples": m.steps, "block_samples": m.block}
        out["note"] = "; ".join(
            x for x in (WITHIN_RUN_NOTE.replace("seconds", "monitor samples"), m.note) if x
        )
        return out

    for i, row in enumerate(info.sort("block", "label", "players").iter_rows(named=True)):
        part = by_cell.get((row["cell_id"],))
        if part is None:
            continue
        ids = {k: row[k] for k in ("cell_id", "run_id", "workload_label", "label", "players")}

        def series(metric: str, nic: str | None = None, part: pl.DataFrame = part) -> FloatArray:
            f = part.filter(pl.col("metric") == metric)
            f = f.filter(pl.col("nic") == nic) if nic else f
            return f.sort("t_s").get_column("value").to_numpy().astype(np.float64)

        cpu_rows.append({**ids, **summary(series("cpu_cores"), "cpu_cores", seed + i)})
        rss = series("rss_bytes") / 2**20
        mem_rows.append(
            {
                **ids,
                **summary(rss, "rss_mib", seed + i),
                "rss_mib_peak": float(peak[row["cell_id"]]) / 2**20,
            }
        )
        # The busiest non-loopback NIC carried the clients' traffic (they ran on other nodes).
        nics = (
            part.filter(pl.col("metric").is_in(["rx_bytes_per_s", "tx_bytes_per_s"]))
            .filter(pl.col("nic") != "lo")
            .group_by("nic")
            .agg(pl.col("value").sum())
            .sort("value", descending=True)
        )
        if nics.height == 0:
            continue
        busiest = str(nics["nic"][0])
        for metric, direction in (("tx_bytes_per_s", "send"), ("rx_bytes_per_s", "receive")):
            x = series(metric, busiest) / 2**20
            others = part.filter(
                (pl.col("metric") == metric) & (pl.col("nic") != busiest) & (pl.col("nic") != "lo")
            )
            other_mean = (
                float(others.group_by("nic").agg(pl.col("value").mean())["value"].sum()) / 2**20
            )
            net_rows.append(
                {
                    **ids,
                    "direction": direction,
                    "nic": busiest,
                    **summary(x, "rate_mib_per_s", seed + i),
                    "other_nics_mib_per_s_mean": other_mean,
                    "counter": "host-wide NIC counter (not the server process's own traffic)",
                }
            )
    return {
        "server_cpu": pl.DataFrame(cpu_rows),
        "server_memory": pl.DataFrame(mem_rows),
        "network": pl.DataFrame(net_rows),
    }


def _per_run_frame(info: pl.DataFrame, values: Mapping[str, Mapping[str, float]]) -> pl.DataFrame:
    """runs-shaped frame (status ok, players, label, workload) with the given metric columns."""
    rows = []
    for row in info.iter_rows(named=True):
        v = values.get(row["cell_id"])
        if v is None:
            continue
        rows.append({**row, "status": "ok", **v})
    return pl.DataFrame(rows)


def _scaling_tables(
    info: pl.DataFrame,
    rtt_by_run: pl.DataFrame,
    cpu: pl.DataFrame,
    memory: pl.DataFrame,
    within: Mapping[str, Mapping[str, WithinRun]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """scaling (OLS slopes with HC3 intervals) and crossings (50/75/100 ms)."""
    values: dict[str, dict[str, float]] = {}
    for frame, cols in (
        (rtt_by_run, {"rtt_p50_ms": "rtt_p50_ms", "rtt_p95_ms": "rtt_p95_ms"}),
        (cpu, {"cpu_cores_mean": "server_cpu_cores"}),
        (memory, {"rss_mib_peak": "server_rss_peak_mib"}),
    ):
        if frame.height == 0:
            continue
        for r in frame.iter_rows(named=True):
            values.setdefault(r["cell_id"], {}).update({new: r[old] for old, new in cols.items()})
    runs = _per_run_frame(info, values)
    scale_rows: list[dict[str, Any]] = []
    cross_rows: list[dict[str, Any]] = []
    if runs.height == 0:
        return pl.DataFrame(), pl.DataFrame()
    # In the data's order: workload1 (idle) before workload2 (active).
    for workload in runs.sort("block")["workload"].unique(maintain_order=True).to_list():
        w = runs.filter(pl.col("workload") == workload)
        wl = WORKLOAD_LABELS.get(workload, workload)
        for metric in ("rtt_p50_ms", "rtt_p95_ms", "server_cpu_cores", "server_rss_peak_mib"):
            if metric not in w.columns:
                continue
            f = fit(w.filter(pl.col(metric).is_not_null()), metric, group="label")
            for label, g in f.groups.items():
                note = "; ".join(
                    x
                    for x in (
                        "one run per player count: the interval treats deviations from the "
                        "line (curvature included, see r2) as noise; no run-to-run replication",
                        g.note,
                        f.note,
                    )
                    if x
                )
                scale_rows.append(
                    {
                        "workload_label": wl,
                        "label": label,
                        "metric": metric,
                        "slope_per_player": _finite(g.slope),
                        "slope_low_per_player": _finite(g.slope_low),
                        "slope_high_per_player": _finite(g.slope_high),
                        "intercept": _finite(g.intercept),
                        "r2": _finite(g.r2),
                        "runs": g.n,
                        "player_counts": g.player_counts,
                        "level": g.level,
                        "cov_type": f.cov_type,
                        "slopes_differ_pvalue": _finite(f.slopes_differ_pvalue),
                        "note": note,
                    }
                )
        for metric, key in (("rtt_p50_ms", "p50"), ("rtt_p95_ms", "p95")):
            for label in sorted(w.filter(pl.col(metric).is_not_null())["label"].unique()):
                sub = w.filter((pl.col("label") == label) & pl.col(metric).is_not_null())
                for threshold in THRESHOLDS_MS:
                    c = crossing(w, metric, threshold, label, group="label")
                    low_w = high_w = None
                    if c.estimate is not None:
                        counts = np.asarray(c.player_counts, dtype=np.float64)
                        order = sub.sort("players")
                        draws = np.column_stack(
                            [within[cid][key].draws for cid in order["cell_id"].to_list()]
                        )
                        ok = np.all(np.isfinite(draws), axis=1)
                        lo, hi = percentile_bounds(
                            first_crossing(counts, draws[ok], threshold), LEVEL
                        )
                        low_w, high_w = _finite(lo), _finite(hi)
                    note = "; ".join(
                        x
                        for x in (
                            "one run per player count: no between-run interval (a bootstrap "
                            "over runs has nothing to resample)",
                            "within-run interval: each run's within-run bootstrap draws "
                            "passed through the same interpolation"
                            if c.estimate is not None
                            else None,
                            *_crossing_notes(c.note),
                        )
                        if x
                    )
                    cross_rows.append(
                        {
                            "workload_label": wl,
                            "label": label,
                            "metric": metric,
                            "threshold_ms": threshold,
                            "crossing_players": _finite(c.estimate),
                            "between_run_low_players": None,
                            "between_run_high_players": None,
                            "within_run_low_players": low_w,
                            "within_run_high_players": high_w,
                            "runs": c.n,
                            "largest_players": max(c.player_counts) if c.player_counts else None,
                            "note": note,
                        }
                    )
    cross = pl.DataFrame(
        cross_rows,
        schema_overrides={
            "between_run_low_players": pl.Float64,
            "between_run_high_players": pl.Float64,
            "within_run_low_players": pl.Float64,
            "within_run_high_players": pl.Float64,
            "crossing_players": pl.Float64,
        },
    )
    return pl.DataFrame(scale_rows), cross


def _crossing_notes(note: str | None) -> list[str]:
    """stats.scaling.crossing's notes without the one on its between-run interval, which is not
    reported here (with one run per count it is the point itself)."""
    parts = [x.strip() for x in (note or "").split(";") if x.strip()]
    return [x for x in parts if not x.startswith("only ") or "too narrow" not in x]


def _flaw_tables(result: ImportResult, info: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """flaws (every dataset and per-run flaw, one row each) and flaws_summary (grouped)."""
    rows: list[dict[str, Any]] = [
        {"scope": "dataset", "cell_id": None, "run_id": None, "label": None,
         "workload_label": None, "players": None, "flaw": f}
        for f in result.flaws
    ]  # fmt: skip
    runs = result.runs.join(info.select("cell_id", "label", "workload_label"), on="cell_id")
    for r in runs.sort("block", "label", "players").iter_rows(named=True):
        for f in (r["flaws"] or "").split(";"):
            if f:
                rows.append(
                    {"scope": "run", "cell_id": r["cell_id"], "run_id": r["run_id"],
                     "label": r["label"], "workload_label": r["workload_label"],
                     "players": r["players"], "flaw": f}
                )  # fmt: skip
    flaws = pl.DataFrame(rows, schema_overrides={"players": pl.Int64})
    dataset = set(result.flaws)
    per_run = flaws.filter(pl.col("scope") == "run")
    summary_rows = []
    for (flaw,), group in per_run.group_by("flaw", maintain_order=True):
        cells = set(group["cell_id"].to_list())
        summary_rows.append(
            {
                "flaw": flaw,
                "runs": len(cells),
                "runs_total": runs.height,
                "dataset_wide": flaw in dataset,
                "applies_to": describe_runs(cells, runs),
                "cells": ", ".join(sorted(cells)),
            }
        )
    return flaws, pl.DataFrame(summary_rows)


def describe_runs(cells: set[str], runs: pl.DataFrame) -> str:
    """Which runs a set of cells is, in words where it is a whole group: "all runs", "all Mirror
    KCP runs", "all workload 2: active runs of NFE (UTP)"; else the cell ids."""
    everyone = set(runs["cell_id"].to_list())
    if cells == everyone:
        return "all runs"

    def whole(column: str) -> list[str] | None:
        """The values of column whose runs together are exactly cells, if any."""
        values = sorted(
            {v for v, c in zip(runs[column], runs["cell_id"], strict=True) if c in cells}
        )
        covered = set(runs.filter(pl.col(column).is_in(values))["cell_id"].to_list())
        return values if covered == cells else None

    if (labels := whole("label")) is not None:
        return f"all {len(cells)} runs of " + ", ".join(labels)
    if (workloads := whole("workload_label")) is not None:
        return f"all {len(cells)} runs of " + ", ".join(workloads)
    return ", ".join(sorted(cells))


# -- findings --------------------------------------------------------------------------------


def _dataset(result: ImportResult, data_dir: Path) -> dict[str, Any]:
    licence = data_dir / "LICENSE"
    source_md = data_dir / "SOURCE.md"
    lic_lines = licence.read_text(errors="replace").splitlines() if licence.is_file() else []
    commit = re.search(r"\b[0-9a-f]{40}\b", source_md.read_text()) if source_md.is_file() else None
    try:
        shown = str(data_dir.resolve().relative_to(REPO))
    except ValueError:
        shown = data_dir.name  # not inside the repository: no machine-specific path
    runs = result.runs
    return {
        "source": SOURCE,
        "data_dir": shown,
        "upstream": "atlarge-research/Net-Celerity",
        "commit": commit.group(0) if commit else None,
        "licence": lic_lines[0].strip() if lic_lines else "unknown (no LICENSE file)",
        "copyright": next((x.strip() for x in lic_lines if "Copyright" in x), None),
        "runs": runs.height,
        "runs_with_rtt": int(runs["players_connected_max"].is_not_null().sum()),
        "runs_with_system_log": int(runs["server_cpu_cores"].is_not_null().sum()),
        "rtt_samples": result.samples.height,
        "resource_rows": result.resources.height,
        "files_read": len(result.bad_rows),
        "bad_rows": int(sum(result.bad_rows.values())),
        "bad_rows_by_file": {k: v for k, v in sorted(result.bad_rows.items()) if v},
        "problems": list(result.problems),
        "player_counts": sorted(int(x) for x in runs["players"].unique()),
        "prototypes": sorted(
            {LABELS.get((p, t), p) for p, t in runs.select("prototype", "transport").iter_rows()}
        ),
    }


def _findings(t: Mapping[str, pl.DataFrame], dataset: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(fid: str, statement: str, **values: Any) -> None:
        out.append({"id": fid, "statement": statement, "values": values})

    add(
        "data",
        f"The committed data hold {dataset['runs']} runs ({dataset['runs_with_rtt']} with RTT "
        f"results, {dataset['runs_with_system_log']} with a server system log), "
        f"{dataset['rtt_samples']} RTT samples and {dataset['bad_rows']} bad rows; every "
        "configuration ran once, so no statement below has a between-run interval.",
        runs=dataset["runs"],
        rtt_samples=dataset["rtt_samples"],
        bad_rows=dataset["bad_rows"],
    )
    scaling = t["scaling"]
    if scaling.height:
        for r in scaling.filter(pl.col("metric") == "rtt_p50_ms").iter_rows(named=True):
            add(
                "slope",
                f"{r['label']} ({r['workload_label']}): the run median RTT grows by "
                f"{num(r['slope_per_player'], 3)} ms per player, 95 % HC3 interval "
                f"{interval(r['slope_low_per_player'], r['slope_high_per_player'], 3)} "
                f"(OLS over {r['runs']} single runs, R² {num(r['r2'], 2)}).",
                label=r["label"],
                workload_label=r["workload_label"],
                slope=r["slope_per_player"],
                low=r["slope_low_per_player"],
                high=r["slope_high_per_player"],
                r2=r["r2"],
            )
        for metric, what, unit, digits in (
            ("server_cpu_cores", "Server CPU", "cores", 4),
            ("server_rss_peak_mib", "Peak server RSS", "MiB", 2),
        ):
            part = scaling.filter(pl.col("metric") == metric)
            for wl in part["workload_label"].unique(maintain_order=True).to_list():
                rows = part.filter(pl.col("workload_label") == wl).sort("label")
                parts = [
                    f"{r['label']} {num(r['slope_per_player'], digits)} "
                    f"{interval(r['slope_low_per_player'], r['slope_high_per_player'], digits)}"
                    for r in rows.iter_rows(named=True)
                ]
                add(
                    f"slope_{metric}",
                    f"{what} per added player ({wl}; {unit} per player, 95 % HC3 "
                    f"interval over single runs): " + "; ".join(parts) + ".",
                    metric=metric,
                    workload_label=wl,
                    slopes={r["label"]: r["slope_per_player"] for r in rows.iter_rows(named=True)},
                )
    cross = t["crossings"]
    if cross.height:
        p50 = cross.filter(pl.col("metric") == "rtt_p50_ms")
        for r in p50.filter(pl.col("crossing_players").is_not_null()).iter_rows(named=True):
            add(
                "crossing",
                f"{r['label']} ({r['workload_label']}): the run median RTT reaches "
                f"{num(r['threshold_ms'], 0)} ms at about {num(r['crossing_players'], 1)} players "
                f"(interpolated between single runs; within-run 95 % interval "
                f"{interval(r['within_run_low_players'], r['within_run_high_players'], 1)}, no "
                "between-run interval).",
                label=r["label"],
                workload_label=r["workload_label"],
                threshold_ms=r["threshold_ms"],
                crossing_players=r["crossing_players"],
                low=r["within_run_low_players"],
                high=r["within_run_high_players"],
            )
        never = p50.filter(pl.col("crossing_players").is_null())
        if never.height:
            groups = (
                never.group_by("label", "workload_label", maintain_order=True)
                .agg(pl.col("threshold_ms").sort())
                .iter_rows(named=True)
            )
            parts = [
                f"{g['label']} ({g['workload_label']}) "
                + " and ".join(f"{num(x, 0)}" for x in g["threshold_ms"])
                + " ms"
                for g in groups
            ]
            largest = int(never["largest_players"].max() or 0)
            add(
                "no_crossing",
                f"Thresholds the run median RTT does not reach up to {largest} players: "
                + "; ".join(parts)
                + ".",
                largest_players=largest,
            )
    warm = t["warmup"]
    if warm.height:
        diff = warm["pooled_minus_fixed_ms"].to_numpy()
        j = int(np.argmax(np.abs(diff)))
        worst = warm.row(j, named=True)
        lo, hi = warm["rtt_p50_fixed_low_ms"].to_numpy(), warm["rtt_p50_fixed_high_ms"].to_numpy()
        pooled = warm["rtt_p50_pooled_ms"].to_numpy()
        outside = int(np.sum((pooled < lo) | (pooled > hi)))
        add(
            "pooled_vs_fixed",
            f"Pooling all rows, ramp-up included (their method for RTT), moves the run median "
            f"by {num(float(diff.min()))} to {num(float(diff.max()))} ms against the fixed "
            f"{num(float(t['runs_overview']['duration_s'].max()), 0)} s window (median "
            f"{num(float(np.median(diff)))} ms over {warm.height} runs); "
            f"the largest change is {worst['label']} ({worst['workload_label']}) at "
            f"{worst['players']} players: {num(worst['rtt_p50_pooled_ms'])} ms pooled against "
            f"{num(worst['rtt_p50_fixed_ms'])} ms in the window. In {outside} of {warm.height} "
            "runs the pooled median lies outside the within-run 95 % interval of the window "
            "median.",
            min_ms=float(diff.min()),
            max_ms=float(diff.max()),
            median_ms=float(np.median(diff)),
            outside=outside,
            runs=warm.height,
        )
        mser = warm["mser_cut_t_s"].to_numpy()
        d_mser = (warm["rtt_p50_mser_ms"] - warm["rtt_p50_fixed_ms"]).to_numpy()
        n_second = int(warm["mser_second_half"].sum())
        late = warm.filter(pl.col("last_join_t_s") > 0)
        add(
            "mser",
            f"MSER-5 on per-second medians cuts between {num(float(mser.min()), 1)} and "
            f"{num(float(mser.max()), 1)} s relative to the start of their fixed window "
            f"(median {num(float(np.median(mser)), 1)} s); in {n_second} of {warm.height} runs "
            "its minimum lies in the second half (the run did not settle). The MSER-5 window "
            f"medians differ from the fixed-window ones by {num(float(d_mser.min()))} to "
            f"{num(float(d_mser.max()))} ms.",
            mser_min_t_s=float(mser.min()),
            mser_max_t_s=float(mser.max()),
            second_half=n_second,
        )
        add(
            "last_join",
            f"In {late.height} of {warm.height} runs the first RTT row of the last player to join "
            f"(reconstructed time) comes after the start of the fixed window (latest at "
            f"{num(float(warm['last_join_t_s'].max()), 2)} s): their fixed cut does not wait "
            "until all players are connected.",
            runs_late=late.height,
            latest_t_s=float(warm["last_join_t_s"].max()),
        )
    floor = t["frame_floor"]
    if floor.height:
        total = int(floor["samples"].sum())
        frac = floor["frac_on_frame_multiple"]
        mins = floor["rtt_min_ms"].unique().sort().to_list()
        min_text = (
            f"is {num(mins[0])} ms"
            if len(mins) == 1
            else f"ranges from {num(mins[0])} to {num(mins[-1])} ms"
        )
        mostly = floor.filter(pl.col("frac_on_frame_multiple") > 0.5)
        counts = ", ".join(str(p) for p in sorted(set(mostly["players"].to_list())))
        p5_max = float(t["rtt_by_run"]["rtt_p5_ms"].max()) if t["rtt_by_run"].height else math.nan
        add(
            "frame_floor",
            f"The minimum RTT of every Mirror run {min_text}, one 60 FPS frame "
            f"({num(FRAME_MS, 3)} ms), even in runs whose 5th percentile is as high as "
            f"{num(p5_max)} ms. Per run, {num(100 * float(frac.min()), 1)} to "
            f"{num(100 * float(frac.max()), 1)} % of the samples lie within "
            f"{num(FRAME_TOLERANCE_MS)} ms of a whole number of frames, against "
            f"{num(100 * expected_fraction_unquantised(), 2)} % for values not tied to frames; "
            f"more than half do in {mostly.height} of {floor.height} runs"
            + (f" (at {counts} players)." if mostly.height else "."),
            rtt_min_ms=mins,
            frac_min=float(frac.min()),
            frac_max=float(frac.max()),
            runs_mostly_on_frames=mostly.height,
            samples=total,
        )
    net = t["network"]
    if net.height:
        top = int(net["players"].max())
        at = net.filter((pl.col("players") == top) & (pl.col("direction") == "send")).sort(
            "workload_label", "label"
        )
        parts = [
            f"{r['label']} ({r['workload_label']}) {num(r['rate_mib_per_s_mean'])} "
            f"{interval(r['rate_mib_per_s_mean_low'], r['rate_mib_per_s_mean_high'])}"
            for r in at.iter_rows(named=True)
        ]
        add(
            "network",
            f"Send rate of the server node at {top} players (MiB/s, window mean with within-run "
            f"95 % interval; host-wide {at['nic'][0] if at.height else 'NIC'} counters, so "
            "any other traffic of the node is included): " + "; ".join(parts) + ".",
            players=top,
        )
    return out


def shape(
    result: ImportResult,
    data_dir: Path,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> Shaped:
    """Every figure table and the findings from an import."""
    info = _run_info(result.runs)
    rtt, within = _rtt_tables(result.samples, info, n_resamples, seed)
    res = _resource_tables(result.resources, result.runs, info, n_resamples, seed)
    scaling, crossings = _scaling_tables(
        info, rtt["rtt_by_run"], res["server_cpu"], res["server_memory"], within
    )
    flaws, flaws_summary = _flaw_tables(result, info)
    thresholds = pl.DataFrame(
        {"threshold_ms": list(THRESHOLDS_MS), "meaning": list(THRESHOLDS_MS.values())}
    )
    tables = {
        **rtt,
        **res,
        "scaling": scaling,
        "crossings": crossings,
        "thresholds": thresholds,
        "flaws": flaws,
        "flaws_summary": flaws_summary,
        "runs_overview": info.join(
            result.runs.select("cell_id", "players_connected_max"), on="cell_id"
        ).sort("block", "label", "players"),
    }
    dataset = _dataset(result, data_dir)
    findings = {
        "source": SOURCE,
        "ci_level": LEVEL,
        "n_resamples": n_resamples,
        "seed": seed,
        "frame_ms": FRAME_MS,
        "frame_tolerance_ms": FRAME_TOLERANCE_MS,
        "net_celerity_cut_s": NET_CELERITY_CUT_S,
        "thresholds_ms": list(THRESHOLDS_MS),
        "dataset": dataset,
        "dataset_flaws": list(result.flaws),
        "findings": _findings(tables, dataset),
    }
    return Shaped(tables, findings)


# -- writing -------------------------------------------------------------------------------------


def write_shaped(shaped: Shaped, out_dir: Path) -> list[Path]:
    """Each table as <name>.csv and the findings as findings.json in out_dir, atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in shaped.tables.items():
        path = out_dir / f"{name}.csv"
        records.replace_atomically(path, lambda p, t=table: t.write_csv(p, float_precision=6))
        written.append(path)
    path = out_dir / "findings.json"
    text = json.dumps(shaped.findings, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    records.replace_atomically(path, lambda p: p.write_text(text, encoding="utf-8"))
    written.append(path)
    return written


def build(
    data_dir: Path, results_dir: Path, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> Shaped:
    """Import, shape and write every table (Parquet for the importer's, CSV for the figures')."""
    if not data_dir.is_dir():
        raise FileNotFoundError(
            f"--data {data_dir}: not a directory (expected Net-Celerity's data)"
        )
    result = import_dir(data_dir)
    if result.runs.height == 0:
        raise ValueError(f"--data {data_dir}: no Net-Celerity runs found (workload*_results/ "
                         "or system_logs_workload*/ expected)")  # fmt: skip
    write_tables(result, results_dir)
    shaped = shape(result, data_dir, n_resamples, seed)
    write_shaped(shaped, results_dir)
    return shaped


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.reanalysis", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Net-Celerity's raw data")
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help="tables go here")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the HTML report")
    ap.add_argument("--pdf", type=Path, help="also write this PDF")
    args = ap.parse_args(argv)
    started = time.monotonic()
    try:
        shaped = build(args.data, args.results)
    except (FileNotFoundError, ValueError) as exc:
        ap.error(str(exc))
    shaped_s = time.monotonic() - started
    print(f"{len(shaped.tables)} tables and findings.json -> {args.results} ({shaped_s:.1f} s)")
    try:
        which = render({"results": str(args.results.resolve())}, args.out, source=QMD, pdf=args.pdf)
    except RenderError as exc:
        print(f"report.reanalysis: render failed: {exc}", file=sys.stderr)
        return 1
    total_s = time.monotonic() - started
    print(f"report ({which}): {args.out}" + (f" and {args.pdf}" if args.pdf else "")
          + f" ({total_s:.1f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
