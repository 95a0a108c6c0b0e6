"""From runs.parquet to what the report says: intervals per cell, comparisons, scaling, findings.

    runs.parquet -> cells.parquet/.csv         one row per cell x metric
                    comparisons.parquet/.csv   transport against transport
                    findings.json              statements with numbers
    (all in data/results/<campaign>/)

Every interval is across runs (a run is the unit of independence). A cell with too few runs for
an interval gets its point estimate and a note instead; nothing is silently dropped.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats import compare, intervals, scaling
from workflow.campaign import records

METRICS = (
    ("rtt_net_p50_us", "RTT p50", "µs"),
    ("rtt_net_p95_us", "RTT p95", "µs"),
    ("rtt_net_p99_us", "RTT p99", "µs"),
    ("send_late_p99_us", "send lateness p99", "µs"),
    ("server_cpu_cores", "server CPU", "cores"),
    ("client_cpu_cores", "client CPU", "cores"),
    ("server_rss_bytes", "server RSS", "bytes"),
    ("server_tx_bytes_per_s", "server outbound", "B/s"),
    ("server_rx_bytes_per_s", "server inbound", "B/s"),
)
CELL_KEYS = (
    "cell_id",
    "prototype",
    "transport",
    "players",
    "workload",
    "params",
    "network_profile",
)
# Cells that differ only in transport are compared with each other.
CONTEXT_KEYS = ("prototype", "players", "workload", "params", "network_profile", "duration_s")
THRESHOLDS_MS = (50, 75, 100)  # the papers' playability thresholds
LEVEL = 0.95
BOOTSTRAP_MIN_RUNS = 20  # the median's bootstrap reached nominal coverage from 20 runs


def _values(df: pl.DataFrame, metric: str) -> np.ndarray:
    if metric not in df.columns:
        return np.empty(0)
    arr = df[metric].cast(pl.Float64, strict=False).to_numpy()
    return arr[np.isfinite(arr)]


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def cells(runs: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    ok = runs.filter(pl.col("status") == "ok")
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
                    "estimate": _num(iv.estimate),
                    "ci_low": _num(iv.low),
                    "ci_high": _num(iv.high),
                    "ci_level": LEVEL,
                    "method": "order statistics (median over runs)",
                    "boot_low": _num(boot.low),
                    "boot_high": _num(boot.high),
                    "boot_method": f"bootstrap {boot.method}, seed {seed}",
                    "boot_note": boot_note,
                    "n_runs": len(vals),
                    "runs_planned": group.height,
                    "runs_failed": group.filter(pl.col("status") != "ok").height,
                    "note": iv.note,
                }
            )
    return pl.DataFrame(rows, infer_schema_length=None)


def comparisons(runs: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    ok = runs.filter(pl.col("status") == "ok")
    rows: list[dict[str, Any]] = []
    keys = [k for k in CONTEXT_KEYS if k in ok.columns]
    for ctx, group in ok.group_by(keys, maintain_order=True):
        transports = sorted(group["transport"].unique().to_list())
        for a, b in itertools.combinations(transports, 2):
            ga = group.filter(pl.col("transport") == a)
            gb = group.filter(pl.col("transport") == b)
            for metric in ("rtt_net_p50_us", "rtt_net_p99_us", "server_cpu_cores"):
                if metric not in group.columns:
                    continue
                va, vb = _values(ga, metric), _values(gb, metric)
                ratio = compare.ratio_of_medians(va, vb, level=LEVEL, seed=seed)
                rows.append(
                    {
                        **dict(zip(keys, ctx, strict=True)),
                        "metric": metric,
                        "a": a,
                        "b": b,
                        "ratio_b_over_a": _num(ratio.estimate),
                        "ci_low": _num(ratio.low),
                        "ci_high": _num(ratio.high),
                        "cliffs_delta": _num(compare.cliffs_delta(va, vb)),
                        "hodges_lehmann": _num(compare.hodges_lehmann(va, vb)),
                        "p_value": _num(compare.mann_whitney_p(va, vb)),
                        "n_a": len(va),
                        "n_b": len(vb),
                        "note": ratio.note,
                    }
                )
    df = pl.DataFrame(rows, infer_schema_length=None)
    if df.height:
        p = df["p_value"].fill_null(1.0).to_numpy()
        df = df.with_columns(p_bh=pl.Series(compare.benjamini_hochberg(p)))
    return df


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "n/a"
    if unit == "µs":
        return f"{x / 1000:.3g} ms"
    return f"{x:.3g} {unit}"


def params_label(params: str | None) -> str:
    """'{"size": "S", "rate_hz": 30}' -> 'rate_hz=30 size=S'; '' for no parameters. Statements
    and figures name a cell's workload parameters this way."""
    try:
        doc = json.loads(params) if params else {}
    except ValueError:
        return str(params)
    return " ".join(f"{k}={v}" for k, v in sorted(doc.items())) if isinstance(doc, dict) else ""


def findings(runs: pl.DataFrame, cell_table: pl.DataFrame, comps: pl.DataFrame) -> list[dict]:
    out: list[dict[str, Any]] = []
    # Scaling: growth from the smallest to the largest player count, and threshold crossings.
    ok = runs.filter(pl.col("status") == "ok")
    group_keys = [
        k for k in ("prototype", "transport", "workload", "network_profile") if k in ok.columns
    ]
    for ctx, group in ok.group_by(group_keys, maintain_order=True):
        players = sorted(set(group["players"].to_list()))
        name = " ".join(str(c) for c in ctx[1:3])
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
                {
                    "kind": "scaling",
                    "statement": f"{name}: RTT p50 grows {g.estimate:.2g}x "
                    f"[{g.low:.2g}, {g.high:.2g}] from {players[0]} to {players[-1]} players"
                    if g.note is None
                    else f"{name}: RTT p50 growth from {players[0]} to {players[-1]} players "
                    f"not estimated: {g.note}",
                    "context": dict(zip(group_keys, ctx, strict=True)),
                    "estimate": _num(g.estimate),
                    "ci_low": _num(g.low),
                    "ci_high": _num(g.high),
                    "note": g.note,
                }
            )
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
                            {
                                "kind": "threshold",
                                "statement": f"{name}: {metric.split('_')[2]} RTT crosses {ms} ms"
                                f" at {c.estimate:.0f} players [{c.low:.0f}, {c.high:.0f}]",
                                "context": dict(zip(group_keys, ctx, strict=True)),
                                "metric": metric,
                                "threshold_ms": ms,
                                "estimate": _num(c.estimate),
                                "ci_low": _num(c.low),
                                "ci_high": _num(c.high),
                            }
                        )
    # Slopes per transport (statsmodels OLS, metric ~ players x transport) where a context has
    # several player counts.
    ctx_keys = [k for k in ("prototype", "workload", "network_profile") if k in ok.columns]
    for ctx, group in ok.group_by(ctx_keys, maintain_order=True):
        if group["players"].n_unique() < 2 or "rtt_net_p50_us" not in group.columns:
            continue
        fitted = scaling.fit(group, "rtt_net_p50_us", group="transport")
        for value, slope in fitted.groups.items():
            if slope.note is not None and not math.isfinite(slope.slope):
                continue
            out.append(
                {
                    "kind": "slope",
                    "statement": f"{value} {ctx[1]}: RTT p50 changes by "
                    f"{slope.slope * 100 / 1000:.3g} ms per 100 players "
                    f"[{slope.slope_low * 100 / 1000:.3g}, {slope.slope_high * 100 / 1000:.3g}]"
                    f" (OLS over {slope.n} runs, HC3)" + (f"; {slope.note}" if slope.note else ""),
                    "context": {**dict(zip(ctx_keys, ctx, strict=True)), "transport": value},
                    "slope_us_per_player": _num(slope.slope),
                    "ci_low": _num(slope.slope_low),
                    "ci_high": _num(slope.slope_high),
                }
            )
    # Comparisons whose interval excludes 1 after Benjamini-Hochberg.
    if comps.height:
        sig = comps.filter((pl.col("p_bh") < 0.05) & pl.col("ci_low").is_not_null())
        for r in sig.iter_rows(named=True):
            if r["ci_low"] <= 1.0 <= r["ci_high"]:
                continue
            label = params_label(r.get("params"))
            where = f" ({label})" if label else ""
            out.append(
                {
                    "kind": "comparison",
                    "statement": f"{r['b']} {r['metric']} is {r['ratio_b_over_a']:.2g}x "
                    f"[{r['ci_low']:.2g}, {r['ci_high']:.2g}] that of {r['a']} at "
                    f"{r['players']} players, {r['workload']}{where}, {r['network_profile']} "
                    f"(Cliff's delta {r['cliffs_delta']:.2f}, BH-adjusted p {r['p_bh']:.3g})",
                    **{k: r[k] for k in ("a", "b", "metric", "players", "workload")},
                    "estimate": r["ratio_b_over_a"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                }
            )
        if sig.height == 0:
            n = int(min(comps["n_a"].min(), comps["n_b"].min()))  # type: ignore[arg-type]
            smallest = 2 / math.comb(2 * n, n) if n > 0 else float("nan")
            out.append(
                {
                    "kind": "inconclusive",
                    "statement": f"no transport comparison is significant after "
                    f"Benjamini-Hochberg ({comps.height} tests); with {n} runs per cell the "
                    f"smallest possible two-sided Mann-Whitney p is {smallest:.2g}",
                }
            )
    # What cannot be concluded, and runs that never settled: listed, never hidden.
    if "warmup_second_half" in runs.columns:
        unsettled = runs.filter(pl.col("warmup_second_half").fill_null(False))
        for r in unsettled.iter_rows(named=True):
            out.append(
                {
                    "kind": "warmup",
                    "statement": f"{r['cell_id']}/{r['run_id']}: the MSER-5 warm-up cut lands in "
                    "the second half of the window (the run did not settle)",
                    "cell_id": r["cell_id"],
                    "run_id": r["run_id"],
                }
            )
    failed = runs.filter(pl.col("status") != "ok")
    if failed.height:
        out.append(
            {
                "kind": "failed",
                "statement": f"{failed.height} of {runs.height} planned runs are not in the "
                "statistics (failed or not run)",
                "runs": [f"{r['cell_id']}/{r['run_id']}" for r in failed.iter_rows(named=True)],
            }
        )
    few = cell_table.filter(pl.col("note").is_not_null() & (pl.col("metric") == "rtt_net_p50_us"))
    if few.height:
        out.append(
            {
                "kind": "inconclusive",
                "statement": f"{few.height} cells have no interval for RTT p50: "
                + "; ".join(sorted(set(few["note"].to_list()))),
                "cells": few["cell_id"].to_list(),
            }
        )
    return out


def _write(df: pl.DataFrame, out_dir: Path, name: str) -> None:
    records.replace_atomically(out_dir / f"{name}.parquet", df.write_parquet)
    records.replace_atomically(out_dir / f"{name}.csv", df.write_csv)


def analyse(results: Path, seed: int = 0) -> dict[str, Any]:
    runs = pl.read_parquet(results / "runs.parquet")
    cell_table = cells(runs, seed)
    comps = comparisons(runs, seed)
    _write(cell_table, results, "cells")
    _write(comps, results, "comparisons")
    doc = {
        "campaign": runs["campaign"][0] if runs.height else None,
        "runs": runs.height,
        "runs_ok": runs.filter(pl.col("status") == "ok").height,
        "cells": runs["cell_id"].n_unique() if runs.height else 0,
        "ci_level": LEVEL,
        "seed": seed,
        "findings": findings(runs, cell_table, comps),
    }
    records.write_text(results / "findings.json", json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m stats.analyse", description=__doc__)
    ap.add_argument("results", type=Path, help="data/results/<campaign> (with runs.parquet)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    doc = analyse(args.results, args.seed)
    for f in doc["findings"]:
        print(f"- {f['statement']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
