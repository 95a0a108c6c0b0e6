"""From runs.parquet to what the report says: intervals per cell, comparisons, scaling, findings.

    runs.parquet -> cells.parquet/.csv         one row per cell x metric
                    comparisons.parquet/.csv   every planned comparison (stats.comparisons)
                    far-runs.parquet/.csv      runs far from their siblings (stats.suspects)
                    changepoints.parquet/.csv  per-version series of cell medians, change points
                    findings.json              findings as records (no prose)
                    metrics.json               every metric's name, label and unit
    (all in data/results/<campaign>/)

Every interval is across runs (a run is the unit of independence). A cell with too few runs for
an interval gets its point estimate and a note instead; nothing is silently dropped.

A finding is a record: kind, context (cell keys, metric, ...), estimate, interval ([low, high]
or null), unit (one of UNITS, the stored unit: µs stay "us"), level where there is an interval,
and fields such as p_adjusted and n_runs. The report (report/sentences.py) writes the sentences
and converts units for display.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats import changepoints, interference, intervals, power, scaling, stalls, suspects
from stats.comparisons import COMPARED_METRICS, CONTEXT_KEYS, comparisons, with_variant
from stats.findings import LEVEL, UNITS, finding, num
from stats.runs_frame import float_column, ok_runs
from workflow.files import replace_atomically, write_json

# Per-run metrics with an interval per cell: (runs.parquet column, label, unit).
METRICS = (
    ("rtt_net_p50_us", "RTT p50", "us"),
    ("rtt_net_p95_us", "RTT p95", "us"),
    ("rtt_net_p99_us", "RTT p99", "us"),
    ("send_late_p99_us", "send lateness p99", "us"),
    ("server_cpu_cores", "server CPU", "cores"),
    ("server_cpu_us_per_msg", "server CPU per message", "us/msg"),
    ("server_instr_per_msg", "server instructions per message", "instr/msg"),
    ("client_cpu_cores", "client CPU", "cores"),
    ("server_rss_bytes", "server RSS", "bytes"),
    ("server_tx_bytes_per_s", "server send", "bytes/s"),
    ("server_rx_bytes_per_s", "server receive", "bytes/s"),
    ("server_tx_packets_per_s", "server packets sent", "packets/s"),
    ("server_rx_packets_per_s", "server packets received", "packets/s"),
    ("connect_s", "connect time", "s"),
)
# Per-second metrics of timeseries.parquet (stats/timeseries.py) the cell metrics do not name.
SERIES_METRICS = (
    ("rtt_net_sd_us", "RTT SD per second", "us"),
    ("rtt_net_n", "probe samples per second", "count"),
)
CELL_KEYS = (
    "cell_id",
    "prototype",
    "transport",
    "library_version",
    "players",
    "workload",
    "params",
    "network_profile",
)
THRESHOLDS_MS = (50, 75, 100)  # the papers' playability thresholds
BOOTSTRAP_MIN_RUNS = 20  # the median's bootstrap reached nominal coverage from 20 runs


def _values(df: pl.DataFrame, metric: str) -> np.ndarray:
    if metric not in df.columns:
        return np.empty(0)
    arr = float_column(df, metric)
    return arr[np.isfinite(arr)]


def cells(runs: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    ok = ok_runs(runs, ())
    rows: list[dict[str, Any]] = []
    for key, group in runs.group_by("cell_id", maintain_order=True):
        cell_ok = ok.filter(pl.col("cell_id") == key[0])
        first = group.row(0, named=True)
        for metric, label, unit in METRICS:
            vals = _values(cell_ok, metric)
            # The distribution-free order-statistic interval of the median over runs is the
            # interval of record (exact coverage, none below 6 runs); the seeded BCa bootstrap
            # beside it undercovers below ~20 runs (stats/intervals.py, simulated).
            iv = intervals.quantile_ci(vals, 0.5, level=LEVEL)
            boot = intervals.bootstrap_ci(vals, level=LEVEL, seed=seed)
            boot_note = boot.note
            if boot_note is None and 0 < len(vals) < BOOTSTRAP_MIN_RUNS:
                boot_note = (
                    f"{len(vals)} runs: bootstrap coverage is below nominal under "
                    f"{BOOTSTRAP_MIN_RUNS} runs"
                )
            rows.append(
                {
                    **{k: first.get(k) for k in CELL_KEYS},
                    "metric": metric,
                    "label": label,
                    "unit": unit,
                    "estimate": num(iv.estimate),
                    "ci_low": num(iv.low),
                    "ci_high": num(iv.high),
                    "ci_level": LEVEL,
                    "method": "order statistics (median over runs)",
                    "boot_low": num(boot.low),
                    "boot_high": num(boot.high),
                    "boot_method": f"bootstrap {boot.method}, seed {seed}",
                    "boot_note": boot_note,
                    "n_runs": len(vals),
                    # The smallest change of the median that tonight's runs against as many
                    # baseline runs would detect (80 % power, 5 %, stats/power.py).
                    "mde_ratio": num(power.cell_mde(vals)),
                    "runs_planned": group.height,
                    "runs_failed": group.filter(pl.col("status") != "ok").height,
                    "note": iv.note,
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def _params(value: Any) -> Any:
    """A cell's params JSON text as the object it holds (a finding's context is data)."""
    try:
        return json.loads(value) if isinstance(value, str) and value else value
    except ValueError:
        return value


def findings(runs: pl.DataFrame, cell_table: pl.DataFrame, comps: pl.DataFrame) -> list[dict]:
    """Every finding of a campaign: scaling and threshold crossings, slopes per transport,
    significant comparisons, then what cannot be concluded (listed, never hidden)."""
    ok = ok_runs(runs, ())
    return [
        *_scaling_findings(ok),
        *_slope_findings(ok),
        *_comparison_findings(comps),
        *_caveat_findings(runs, cell_table),
    ]


def _scaling_findings(ok: pl.DataFrame) -> list[dict[str, Any]]:
    """Growth from the smallest to the largest player count, and the player counts where RTT
    crosses the papers' thresholds, per prototype, transport, version, workload and network."""
    out: list[dict[str, Any]] = []
    group_keys = [
        k
        for k in ("prototype", "transport", "library_version", "workload", "network_profile")
        if k in ok.columns
    ]
    for ctx, group in ok.group_by(group_keys, maintain_order=True):
        players = sorted(set(group["players"].to_list()))
        where = dict(zip(group_keys, ctx, strict=True))
        if len(players) >= 2 and "rtt_net_p50_us" in group.columns:
            g = scaling.growth(
                group.with_columns(pl.lit("x").alias("_g")),
                "rtt_net_p50_us",
                "x",
                players[0],
                players[-1],
                group="_g",
            )
            out.append(
                finding(
                    "scaling",
                    {**where, "metric": "rtt_net_p50_us", "players_from": players[0],
                     "players_to": players[-1]},
                    g.estimate if g.note is None else None,
                    "ratio",
                    g.low if g.note is None else None,
                    g.high if g.note is None else None,
                    g.level,
                    n_runs=g.n_low + g.n_high,
                    note=g.note,
                )
            )  # fmt: skip
            for metric in ("rtt_net_p50_us", "rtt_net_p95_us"):
                if metric not in group.columns:
                    continue
                for ms in THRESHOLDS_MS:
                    c = scaling.crossing(
                        group.with_columns(pl.lit("x").alias("_g")), metric, ms * 1000.0, "x",
                        group="_g",
                    )  # fmt: skip
                    if c.note is None:
                        out.append(
                            finding(
                                "threshold",
                                {**where, "metric": metric, "threshold_us": ms * 1000.0},
                                c.estimate, "players", c.low, c.high, c.level, n_runs=c.n,
                            )
                        )  # fmt: skip
    return out


def _slope_findings(ok: pl.DataFrame) -> list[dict[str, Any]]:
    """Slopes per transport (statsmodels OLS, metric ~ players x transport) where a context has
    several player counts."""
    out: list[dict[str, Any]] = []
    ctx_keys = [k for k in ("prototype", "workload", "network_profile") if k in ok.columns]
    for ctx, group in ok.group_by(ctx_keys, maintain_order=True):
        if group["players"].n_unique() < 2 or "rtt_net_p50_us" not in group.columns:
            continue
        # One slope per transport and library version: versions are never pooled.
        fitted = scaling.fit(with_variant(group), "rtt_net_p50_us", group="_variant")
        for value, slope in fitted.groups.items():
            if slope.note is not None and not math.isfinite(slope.slope):
                continue
            tname, _, version = str(value).partition("@")
            versioned = (
                {"library_version": version or "pinned"} if "library_version" in ok.columns else {}
            )
            out.append(
                finding(
                    "slope",
                    {**dict(zip(ctx_keys, ctx, strict=True)), "transport": tname, **versioned,
                     "metric": "rtt_net_p50_us"},
                    slope.slope, "us/player", slope.slope_low, slope.slope_high, slope.level,
                    n_runs=slope.n, note=slope.note,
                )
            )  # fmt: skip
    return out


_UNIT = {name: unit for name, _, unit in METRICS}


def _side_interval(r: dict[str, Any], side: str) -> list[float | None] | None:
    low, high = r[f"{side}_low"], r[f"{side}_high"]
    return None if low is None and high is None else [num(low), num(high)]


def _comparison_findings(comps: pl.DataFrame) -> list[dict[str, Any]]:
    """Every planned comparison, decided or not (stats.comparisons: its verdict, both medians,
    the suspects and the result without them); when none is significant, also how small a p the
    runs per cell could have given at all."""
    out: list[dict[str, Any]] = []
    if not comps.height:
        return out
    for r in comps.iter_rows(named=True):
        keys = ("a", "b", "metric", *(k for k in CONTEXT_KEYS if k in r))
        context = {k: _params(r[k]) if k == "params" else r[k] for k in keys}
        alternative = None
        if r.get("suspects"):
            alternative = {
                "estimate": num(r["alt_ratio"]),
                "interval": [num(r["alt_low"]), num(r["alt_high"])],
                "p_unadjusted": num(r["alt_p"]), "n_runs": [r["alt_n_a"], r["alt_n_b"]],
            }  # fmt: skip
        out.append(
            finding(
                "comparison", context, r["ratio_b_over_a"], "ratio", r["ci_low"], r["ci_high"],
                verdict=r["verdict"], metric_unit=_UNIT[r["metric"]],
                a_median=num(r["a_median"]), a_interval=_side_interval(r, "a"),
                b_median=num(r["b_median"]), b_interval=_side_interval(r, "b"),
                cliffs_delta=num(r["cliffs_delta"]), p_adjusted=num(r["p_bh"]),
                p_adjustment="Benjamini-Hochberg", n_runs=[r["n_a"], r["n_b"]],
                frame_us=num(r["frame_us"]), profile_rtt_us=num(r["profile_rtt_us"]),
                suspects=json.loads(r["suspects"]) if r.get("suspects") else [],
                without_suspects=alternative, note=r["note"],
                reliable_order=json.loads(r["reliable_order"]) if r.get("reliable_order")
                else None,
            )
        )  # fmt: skip
    compared = comps.filter(pl.col("verdict") != "not_compared")
    decided = compared.filter(pl.col("verdict").is_in(["lower", "higher"]))
    if compared.height and decided.height == 0:
        n = int(min(compared["n_a"].min(), compared["n_b"].min()))  # type: ignore[arg-type]
        smallest = 2 / math.comb(2 * n, n) if n > 0 else None
        out.append(
            finding(
                "inconclusive",
                {"about": "comparisons", "tests": compared.height, "runs_per_cell": n},
                smallest, "fraction",
            )
        )  # fmt: skip
    return out


def _caveat_findings(runs: pl.DataFrame, cell_table: pl.DataFrame) -> list[dict[str, Any]]:
    """What cannot be concluded, and runs that never settled or failed: listed, never hidden."""
    out: list[dict[str, Any]] = []
    if "warmup_second_half" in runs.columns:
        unsettled = runs.filter(pl.col("warmup_second_half").fill_null(False))
        for r in unsettled.iter_rows(named=True):
            out.append(
                finding(
                    "warmup",
                    {"cell_id": r["cell_id"], "run_id": r["run_id"]},
                    r.get("warmup_cut_s"), "s",
                )
            )  # fmt: skip
    failed = runs.filter(pl.col("status") != "ok")
    if failed.height:
        out.append(
            finding(
                "failed",
                {"runs_planned": runs.height,
                 "runs": [f"{r['cell_id']}/{r['run_id']}" for r in failed.iter_rows(named=True)]},
                failed.height, "count",
            )
        )  # fmt: skip
    out += _interference_findings(runs)
    out += _stall_findings(runs)
    few = cell_table.filter(pl.col("note").is_not_null() & (pl.col("metric") == "rtt_net_p50_us"))
    if few.height:
        out.append(
            finding(
                "inconclusive",
                {"about": "interval", "metric": "rtt_net_p50_us", "cells": few["cell_id"].to_list(),
                 "notes": sorted(set(few["note"].to_list()))},
                few.height, "count",
            )
        )  # fmt: skip
    return out


def _interference_findings(runs: pl.DataFrame) -> list[dict[str, Any]]:
    """The ok runs measured beside a busy neighbour (stats.interference), with what the others
    and the hypervisor took: left out of the comparisons, kept in the cells."""
    busy = runs.filter(interference.interfered(runs)).to_dicts()
    if not busy:
        return []
    context = {
        "runs_ok": ok_runs(runs, ()).height,
        "runs": [f"{r['cell_id']}/{r['run_id']}" for r in busy],
        "others_cores": [num(r.get("others_cpu_cores")) for r in busy],
        "steal_cores": [num(r.get("steal_cores")) for r in busy],
        "threshold_others_cores": interference.OTHERS_MAX_CORES,
        "threshold_steal_cores": interference.STEAL_MAX_CORES,
    }
    return [finding("interference", context, len(busy), "count", left_out_of="comparisons")]


def _stall_findings(runs: pl.DataFrame) -> list[dict[str, Any]]:
    """The ok runs whose server or players stalled inside the window (stats.stalls): left out of
    the comparisons, kept in the cells, each with what stalled."""
    if "stalled" not in runs.columns:
        return []
    hit = ok_runs(runs, ()).filter(pl.col("stalled").cast(pl.Boolean).fill_null(False))
    if not hit.height:
        return []
    context = {
        "runs_ok": ok_runs(runs, ()).height,
        "runs": [f"{r['cell_id']}/{r['run_id']}" for r in hit.iter_rows(named=True)],
        "tick_gap_max_s": [num(r.get("tick_gap_max_s")) for r in hit.iter_rows(named=True)],
        "probe_silence_max_s": [
            num(r.get("probe_silence_max_s")) for r in hit.iter_rows(named=True)
        ],
        "bound_s": stalls.STALL_S,
    }
    return [finding("stalled", context, hit.height, "count", left_out_of="comparisons")]


def metrics_doc() -> dict[str, Any]:
    """metrics.json: what the report needs to label and convert every metric it shows."""
    return {
        "metrics": [{"name": n, "label": label, "unit": u} for n, label, u in METRICS],
        "series": [{"name": n, "label": label, "unit": u} for n, label, u in SERIES_METRICS],
        "units": list(UNITS),
        "thresholds_us": [ms * 1000.0 for ms in THRESHOLDS_MS],
        "ci_level": LEVEL,
    }


def _write(df: pl.DataFrame, out_dir: Path, name: str) -> None:
    replace_atomically(out_dir / f"{name}.parquet", df.write_parquet)
    replace_atomically(out_dir / f"{name}.csv", df.write_csv)


def analyse(results: Path, seed: int = 0) -> dict[str, Any]:
    runs = pl.read_parquet(results / "runs.parquet")
    cell_table = cells(runs, seed)
    comps = comparisons(runs, seed)
    _write(cell_table, results, "cells")
    _write(comps, results, "comparisons")
    _write(suspects.far_runs(runs, COMPARED_METRICS), results, "far-runs")
    _write(changepoints.per_version(runs, cell_table), results, "changepoints")
    write_json(results / "metrics.json", metrics_doc(), sort_keys=False, strict=True)
    doc = {
        "campaign": runs["campaign"][0] if runs.height else None,
        "runs": runs.height,
        "runs_ok": ok_runs(runs, ()).height,
        "cells": runs["cell_id"].n_unique() if runs.height else 0,
        "ci_level": LEVEL,
        "seed": seed,
        # The rule that names a run far from its siblings, for the report to state.
        "suspect_rule": suspects.RULE,
        "findings": findings(runs, cell_table, comps),
    }
    write_json(results / "findings.json", doc, sort_keys=False, strict=True)
    return doc
