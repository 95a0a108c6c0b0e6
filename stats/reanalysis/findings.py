"""The re-analysis findings as records (stats.findings.finding): numbers and what they are about,
taken from the tables; report/sentences.py words them.

Kinds: reanalysed_data, rtt_slope, resource_slope, rtt_crossing, threshold_not_reached,
pooled_vs_fixed, mser_cut, last_join, frame_floor, nic_rate. Intervals are within-run
(``interval_kind``) or HC3 over single runs; none is between runs, because every configuration
ran once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats.findings import finding, num
from stats.importers import ImportResult
from stats.importers.netcelerity import SOURCE
from stats.reanalysis.distributions import (
    FRAME_MS,
    FRAME_TOLERANCE_MS,
    expected_fraction_unquantised,
)
from stats.reanalysis.tables import LABELS
from workflow.files import REPO

# The per-player slopes stated besides RTT: (scaling table metric, stored unit of the slope).
RESOURCE_SLOPES = (("server_cpu_cores", "cores/player"), ("server_rss_peak_mib", "MiB/player"))


def dataset(result: ImportResult, data_dir: Path) -> dict[str, Any]:
    """What was read: source, commit, licence, counts of runs, samples and bad rows."""
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
        "licence": lic_lines[0].strip() if lic_lines else None,
        "copyright": next((x.strip() for x in lic_lines if "Copyright" in x), None),
        "runs": runs.height,
        "runs_with_rtt": int(runs["players_connected_max"].is_not_null().sum()),
        "runs_with_system_log": int(runs["server_cpu_cores"].is_not_null().sum()),
        # Runs of the most repeated configuration: 1 means no between-run interval anywhere.
        "runs_per_configuration_max": int(runs.group_by("cell_id").len()["len"].max() or 0),
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


def _config(r: Mapping[str, Any], metric: str) -> dict[str, Any]:
    return {"label": r["label"], "workload_label": r["workload_label"], "metric": metric}


def _slopes(scaling: pl.DataFrame, level: float) -> list[dict[str, Any]]:
    out = [
        finding(
            "rtt_slope",
            _config(r, "rtt_p50_ms"),
            r["slope_per_player"],
            "ms/player",
            r["slope_low_per_player"],
            r["slope_high_per_player"],
            level,
            interval_kind="HC3 over single runs",
            r2=num(r["r2"]),
            n_runs=r["runs"],
        )
        for r in scaling.filter(pl.col("metric") == "rtt_p50_ms").iter_rows(named=True)
    ]
    for metric, unit in RESOURCE_SLOPES:
        part = scaling.filter(pl.col("metric") == metric)
        for wl in part["workload_label"].unique(maintain_order=True).to_list():
            rows = part.filter(pl.col("workload_label") == wl).sort("label")
            out += [
                finding(
                    "resource_slope",
                    _config(r, metric),
                    r["slope_per_player"],
                    unit,
                    r["slope_low_per_player"],
                    r["slope_high_per_player"],
                    level,
                    interval_kind="HC3 over single runs",
                    r2=num(r["r2"]),
                    n_runs=r["runs"],
                )
                for r in rows.iter_rows(named=True)
            ]
    return out


def _crossings(cross: pl.DataFrame, level: float) -> list[dict[str, Any]]:
    p50 = cross.filter(pl.col("metric") == "rtt_p50_ms")
    out = [
        finding(
            "rtt_crossing",
            _config(r, "rtt_p50_ms") | {"threshold_ms": r["threshold_ms"]},
            r["crossing_players"],
            "players",
            r["within_run_low_players"],
            r["within_run_high_players"],
            level,
            interval_kind="within-run",
            between_run_interval=None,  # one run per player count: nothing to resample
            n_runs=r["runs"],
        )
        for r in p50.filter(pl.col("crossing_players").is_not_null()).iter_rows(named=True)
    ]
    out += [
        finding(
            "threshold_not_reached",
            _config(r, "rtt_p50_ms") | {"threshold_ms": r["threshold_ms"]},
            None,
            "players",
            largest_players=r["largest_players"],
        )
        for r in p50.filter(pl.col("crossing_players").is_null()).iter_rows(named=True)
    ]
    return out


def _warmup(warm: pl.DataFrame, window_s: float, level: float) -> list[dict[str, Any]]:
    diff = warm["pooled_minus_fixed_ms"].to_numpy()
    worst = warm.row(int(np.argmax(np.abs(diff))), named=True)
    lo, hi = warm["rtt_p50_fixed_low_ms"].to_numpy(), warm["rtt_p50_fixed_high_ms"].to_numpy()
    pooled = warm["rtt_p50_pooled_ms"].to_numpy()
    mser = warm["mser_cut_t_s"].to_numpy()
    d_mser = (warm["rtt_p50_mser_ms"] - warm["rtt_p50_fixed_ms"]).to_numpy()
    return [
        finding(
            "pooled_vs_fixed",
            {"metric": "rtt_p50_ms", "window_s": window_s},
            float(np.median(diff)),  # pooled minus fixed-window median, median over runs
            "ms",
            range_ms=[float(diff.min()), float(diff.max())],
            n_runs=warm.height,
            # Runs whose pooled median lies outside the within-run interval of the window's.
            runs_outside_interval=int(np.sum((pooled < lo) | (pooled > hi))),
            interval_level=level,
            largest={
                "label": worst["label"],
                "workload_label": worst["workload_label"],
                "players": worst["players"],
                "rtt_p50_pooled_ms": worst["rtt_p50_pooled_ms"],
                "rtt_p50_fixed_ms": worst["rtt_p50_fixed_ms"],
            },
        ),
        finding(
            "mser_cut",
            {"metric": "rtt_p50_ms", "series": "per-second medians"},
            float(np.median(mser)),  # cut relative to the fixed window's start
            "s",
            range_s=[float(mser.min()), float(mser.max())],
            n_runs=warm.height,
            runs_not_settled=int(warm["mser_second_half"].sum()),
            mser_minus_fixed_range_ms=[float(d_mser.min()), float(d_mser.max())],
        ),
        finding(
            "last_join",
            {"metric": "last_join_t_s"},  # the first RTT row of the last player to join
            warm.filter(pl.col("last_join_t_s") > 0).height,  # runs joining after the cut
            "count",
            n_runs=warm.height,
            latest_t_s=float(warm["last_join_t_s"].max()),
        ),
    ]


def _frame_floor(floor: pl.DataFrame, rtt_by_run: pl.DataFrame) -> dict[str, Any]:
    frac = floor["frac_on_frame_multiple"]
    mins = floor["rtt_min_ms"].unique().sort().to_list()
    mostly = floor.filter(pl.col("frac_on_frame_multiple") > 0.5)
    return finding(
        "frame_floor",
        {"prototype": "mirror", "frame_ms": FRAME_MS, "tolerance_ms": FRAME_TOLERANCE_MS},
        float(mins[0]),  # the smallest RTT of any run
        "ms",
        rtt_min_ms=mins,  # each run's minimum, distinct values
        rtt_p5_max_ms=num(rtt_by_run["rtt_p5_ms"].max()) if rtt_by_run.height else None,
        on_frame_fraction_range=[float(frac.min()), float(frac.max())],
        expected_fraction_unquantised=expected_fraction_unquantised(),
        runs_mostly_on_frames=mostly.height,
        players_mostly_on_frames=sorted(set(mostly["players"].to_list())),
        n_runs=floor.height,
        samples=int(floor["samples"].sum()),
    )


def _network(net: pl.DataFrame, level: float) -> list[dict[str, Any]]:
    top = int(net["players"].max())
    at = net.filter((pl.col("players") == top) & (pl.col("direction") == "send"))
    return [
        finding(
            "nic_rate",
            {
                "label": r["label"],
                "workload_label": r["workload_label"],
                "players": top,
                "direction": "send",
                "nic": r["nic"],
                "counter": "host-wide",
            },
            r["rate_mib_per_s_mean"],
            "MiB/s",
            r["rate_mib_per_s_mean_low"],
            r["rate_mib_per_s_mean_high"],
            level,
            interval_kind="within-run",
            statistic="window mean",
        )
        for r in at.sort("workload_label", "label").iter_rows(named=True)
    ]


def findings(
    t: Mapping[str, pl.DataFrame], data: Mapping[str, Any], level: float
) -> list[dict[str, Any]]:
    """Every finding, in the order the report states them."""
    out = [
        finding(
            "reanalysed_data",
            {"source": data["source"]},
            data["runs"],
            "count",
            runs_with_rtt=data["runs_with_rtt"],
            runs_with_system_log=data["runs_with_system_log"],
            runs_per_configuration_max=data["runs_per_configuration_max"],
            rtt_samples=data["rtt_samples"],
            bad_rows=data["bad_rows"],
        )
    ]
    if t["scaling"].height:
        out += _slopes(t["scaling"], level)
    if t["crossings"].height:
        out += _crossings(t["crossings"], level)
    if t["warmup"].height:
        window_s = float(t["runs_overview"]["duration_s"].max())
        out += _warmup(t["warmup"], window_s, level)
    if t["frame_floor"].height:
        out.append(_frame_floor(t["frame_floor"], t["rtt_by_run"]))
    if t["network"].height:
        out += _network(t["network"], level)
    return out
