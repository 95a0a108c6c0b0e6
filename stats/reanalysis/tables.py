"""The re-analysis tables: per run (RTT distribution and its within-run intervals, warm-up
rules, frame floor, per-second series, resources), across player counts (OLS slopes with HC3
intervals, threshold crossings) and the flaw list. Every function is pure: frames in, frames
out; the package's compute() writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import polars as pl

from stats.blockboot import LEVEL, WithinRun, block_bootstrap_mean, block_bootstrap_quantile
from stats.findings import num
from stats.importers import ImportResult
from stats.reanalysis.distributions import (
    FRAME_MS,
    FRAME_TOLERANCE_MS,
    HISTOGRAM_BIN_MS,
    HISTOGRAM_RANGE_MS,
    by_second,
    expected_fraction_unquantised,
    frame_floor,
    histogram_share,
)
from stats.scaling import crossing, first_crossing, fit, percentile_bounds
from stats.warmup import NET_CELERITY_CUT_S, mser5, per_second

FloatArray = npt.NDArray[np.float64]

QUANTILES: Final = (5, 25, 50, 75, 95, 99)  # the box-style summary of Fig 5.1 (percent)
# The thesis's thresholds (section 5.3): FPS players notice latency at 50 ms, their accuracy
# halves beyond 75 ms, third-person RPG and racing players notice about 100 ms.
THRESHOLDS_MS: Final = (50.0, 75.0, 100.0)

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


def run_info(runs: pl.DataFrame) -> pl.DataFrame:
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


def rtt_tables(
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


def resource_tables(
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


def scaling_tables(
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
                        "slope_per_player": num(g.slope),
                        "slope_low_per_player": num(g.slope_low),
                        "slope_high_per_player": num(g.slope_high),
                        "intercept": num(g.intercept),
                        "r2": num(g.r2),
                        "runs": g.n,
                        "player_counts": g.player_counts,
                        "level": g.level,
                        "cov_type": f.cov_type,
                        "slopes_differ_pvalue": num(f.slopes_differ_pvalue),
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
                        low_w, high_w = num(lo), num(hi)
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
                            "crossing_players": num(c.estimate),
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


def flaw_tables(result: ImportResult, info: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """flaws (every dataset and per-run flaw, one row each) and flaws_summary (grouped: how many
    runs and which cells each per-run flaw applies to)."""
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
                "cells": ", ".join(sorted(cells)),
            }
        )
    return flaws, pl.DataFrame(summary_rows)
