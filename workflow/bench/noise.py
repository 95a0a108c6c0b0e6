"""bench-noise: how much identical runs of one cell differ, per metric (data/bench/noise.json).

A nightly sees a regression only when it is larger than its runs' spread. This bench runs one
cell, the reference prototype over tcp with 20 active players and 5 s windows on lan, N times
(identical code, configuration and seed) and gives, per metric, the coefficient of variation
across the runs and the minimum detectable effect at 6 runs against 6 (stats.power: 80 % power,
5 % level): RTT p50 and server CPU in cores (today's nightly metrics) beside server CPU µs per
message (stats.per_message). Beside that cell run the same cell with its server under callgrind
(server_profiler callgrind) and a callgrind cell at a fixed offered load (the stream workload:
every player sends 100 B at 30 Hz, echoed), for server_instr_per_msg's figures; and the nightly's
own cell (100 active players, 12 s), for the figures the nightly lives with. The cells'
repetitions are interleaved (run k of every cell before run k + 1 of any), so a drift of the
machine reaches every cell alike.

The keep-up sweep runs the active cell once at each of a few player counts, with and without
callgrind: the server's messages and ticks per second under callgrind against unprofiled say up to
which load callgrind keeps up (a server that falls behind skips ticks and sends fewer messages,
and its count per message is then of another load).

Runs go to data/bench-runs/noise-<stamp>/. The machine may be shared while it runs (other
processes' CPU in the window, stats.interference, is recorded per run where the runs table has
it), and the figures are those of the machine as it was.

    netstick bench noise [--runs 8] [--duration-s 5] [--keep-up 20,50,100,200]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitors import callgrind
from stats import power, runs_table
from workflow.bench import cells, options, record
from workflow.files import REPO
from workflow.harness import cell as harness_cell

PLAYERS = 20
DURATION_S = 5.0
RUNS = 8
MDE_RUNS = 6  # the nightly's repetitions per cell: the MDE is stated at 6 runs against 6
KEEP_UP_PLAYERS = (20, 50, 100, 200)
KEPT_UP = 0.97  # ticks and messages per second under callgrind at least this share of unprofiled
Progress = Callable[[str], None]


@dataclass(frozen=True)
class NoiseCell:
    """One cell of the bench: its workload and parameters, its profiler, what is read, and its
    players and window where they are not the bench's own (--players, --duration-s)."""

    workload: str
    metrics: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    profiler: str | None = None
    players: int | None = None
    duration_s: float | None = None


NIGHTLY_METRICS = ("rtt_net_p50_us", "server_cpu_cores", "server_cpu_us_per_msg")
CELLS: dict[str, NoiseCell] = {
    "active": NoiseCell("active", NIGHTLY_METRICS),
    "active-callgrind": NoiseCell("active", ("server_instr_per_msg",), profiler="callgrind"),
    "stream30-callgrind": NoiseCell(
        "stream", ("server_instr_per_msg",), {"size": 100, "rate": 30}, "callgrind"
    ),
    # The nightly's own cell (workflow/campaigns/nightly.yaml): 100 active players, 12 s.
    "active100-12s": NoiseCell("active", NIGHTLY_METRICS, players=100, duration_s=12.0),
}


def noise_cell(
    name: str, spec: NoiseCell, players: int, duration_s: float, run_id: str
) -> dict[str, Any]:
    """The validated cell document of one run (every run of a cell has seed 1: identical)."""
    doc: dict[str, Any] = {
        "campaign": "bench-noise",
        "cell_id": name,
        "prototype": str(cells.REFERENCE_MANIFEST),
        "transport": "tcp",
        "players": spec.players or players,
        "workload": spec.workload,
        "params": dict(spec.params),
        "duration_s": spec.duration_s or duration_s,
        "network_profile": cells.NETWORK_PROFILE,
        "placement": "local",  # callgrind's switches reach the server through this machine
        "run_id": run_id,
        "seed": 1,
    }
    if spec.profiler is not None:
        doc["server_profiler"] = spec.profiler
    return harness_cell.validate(doc, f"bench-noise cell {name}/{run_id}")


def _rates(data: runs_table.RunData) -> dict[str, float | None]:
    """The server's messages and ticks per second of the window (server.ticks.csv)."""
    start, end = data.window.start_unix_ns, data.window.end_unix_ns
    if data.tick_messages is None or start is None or end is None or end <= start:
        return {"msgs_per_s": None, "ticks_per_s": None}
    rows = [n for t, n in data.tick_messages if start < t <= end]
    length_s = (end - start) / 1e9
    return {
        "msgs_per_s": round(sum(rows) / length_s, 1),
        "ticks_per_s": round(len(rows) / length_s, 2),
    }


def run_once(cell: dict[str, Any], out: Path) -> dict[str, Any]:
    """One run through the harness and its stats-stage numbers; a failed run is a record with
    its reason, never an exception."""
    outcome = cells.harness_outcome(cell, out)
    rec: dict[str, Any] = {"run_id": cell["run_id"], "ok": outcome.status == "ok"}
    rec["run_dir"] = str(outcome.path)
    if not rec["ok"]:
        rec["error"] = f"{outcome.reason}: {outcome.detail}"
        return rec
    data = runs_table.read_run_dir(outcome.path)
    row = runs_table.measure(data)
    if data.unread:
        rec.update(ok=False, error="read_error: " + "; ".join(data.unread.values()))
    metrics = ("rtt_net_p50_us", "server_cpu_cores", "server_cpu_us_per_msg")
    rec.update({m: row.get(m) for m in (*metrics, "server_instr_per_msg")})
    rec.update(_rates(data))
    # What else ran on the machine in the window, where the runs table measures it.
    rec.update({k: row.get(k) for k in ("others_cpu_cores", "steal_cores", "interference")})
    return rec


def spread(values: Sequence[float | None], mde_runs: int = MDE_RUNS) -> dict[str, Any]:
    """How much runs differ: n, median, mean, sd, coefficient of variation (sd / mean), the
    range over the median, the log values' sd, and the minimum detectable effect at mde_runs
    against mde_runs from that sd (stats.power), as a percentage change; None where fewer than
    two positive values make it."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    out: dict[str, Any] = {"n": len(vals), "median": None, "mean": None, "sd": None}
    out |= {"cv_pct": None, "range_pct": None, "log_sd": None, "mde_pct": None}
    if not vals:
        return out
    median = statistics.median(vals)
    out.update(median=median, mean=statistics.fmean(vals))
    if len(vals) < 2:
        return out
    sd = statistics.stdev(vals)
    mean = out["mean"]
    out.update(sd=sd, cv_pct=100 * sd / mean if mean else None)
    out["range_pct"] = 100 * (max(vals) - min(vals)) / median if median else None
    log_sd = power.log_sd(vals)
    if math.isfinite(log_sd):
        out["log_sd"] = log_sd
        out["mde_pct"] = 100 * (power.minimum_detectable_ratio(log_sd, mde_runs, mde_runs) - 1)
    return out


def keep_up(records: Sequence[Mapping[str, Any]], tick_rate_hz: float) -> list[dict[str, Any]]:
    """Per player count (records: players, profiler, msgs_per_s, ticks_per_s of one run each):
    callgrind's messages and ticks per second as shares of the unprofiled run's, and whether
    both reach KEPT_UP."""
    out = []
    for n in sorted({r["players"] for r in records}):
        plain = next((r for r in records if r["players"] == n and r["profiler"] is None), {})
        cg = next((r for r in records if r["players"] == n and r["profiler"] is not None), {})
        msgs = _share(cg.get("msgs_per_s"), plain.get("msgs_per_s"))
        ticks = _share(cg.get("ticks_per_s"), plain.get("ticks_per_s"))
        kept = None if msgs is None or ticks is None else msgs >= KEPT_UP and ticks >= KEPT_UP
        out.append(
            {
                "players": n,
                "msgs_per_s": plain.get("msgs_per_s"),
                "msgs_per_s_callgrind": cg.get("msgs_per_s"),
                "msgs_share": msgs,
                "ticks_per_s": plain.get("ticks_per_s"),
                "ticks_per_s_callgrind": cg.get("ticks_per_s"),
                "tick_rate_hz": tick_rate_hz,
                "ticks_share": ticks,
                "server_cpu_cores": plain.get("server_cpu_cores"),
                "server_cpu_cores_callgrind": cg.get("server_cpu_cores"),
                "server_instr_per_msg": cg.get("server_instr_per_msg"),
                "kept_up": kept,
            }
        )
    return out


def _share(a: float | None, b: float | None) -> float | None:
    return round(a / b, 4) if a is not None and b else None


def run(
    out: Path,
    raw: Path,
    *,
    runs: int = RUNS,
    duration_s: float = DURATION_S,
    players: int = PLAYERS,
    keep_up_players: Sequence[int] = KEEP_UP_PLAYERS,
    progress: Progress = cells.print_progress,
) -> dict[str, Any]:
    """Run the cells interleaved and the keep-up sweep, write the document to out, return it."""
    raw = raw / time.strftime("noise-%Y%m%dT%H%M%SZ", time.gmtime())
    load_before = os.getloadavg()
    t0 = time.monotonic()
    by_cell: dict[str, list[dict[str, Any]]] = {name: [] for name in CELLS}
    for k in range(1, runs + 1):
        for name, spec in CELLS.items():
            cell = noise_cell(name, spec, players, duration_s, f"r{k}")
            progress(f"run {k}/{runs}: {name} ...")
            by_cell[name].append(run_once(cell, raw / name / cell["run_id"]))
    sweep = []
    for n in keep_up_players:
        for spec in (CELLS["active"], CELLS["active-callgrind"]):
            name = "keep-up-" + ("callgrind" if spec.profiler else "plain")
            cell = noise_cell(name, spec, n, duration_s, f"p{n}")
            progress(f"keep-up: {n} players, {spec.profiler or 'unprofiled'} ...")
            sweep.append(
                {"players": n, "profiler": spec.profiler} | run_once(cell, raw / name / f"p{n}")
            )
    figures = [
        {"cell": name, "metric": m, **spread([r.get(m) for r in recs if r["ok"]])}
        for name, recs in by_cell.items()
        for m in CELLS[name].metrics
    ]
    tick_rate = float(noise_cell("active", CELLS["active"], 1, 1.0, "r0")["tick_rate_hz"])
    body = {
        "config": {
            "runs": runs,
            "duration_s": duration_s,
            "players": players,
            "transport": "tcp",
            "network_profile": cells.NETWORK_PROFILE,
            "cells": {
                name: {
                    "workload": s.workload,
                    "params": dict(s.params),
                    "profiler": s.profiler,
                    "players": s.players or players,
                    "duration_s": s.duration_s or duration_s,
                }
                for name, s in CELLS.items()
            },
            "order": "interleaved: run k of every cell before run k + 1 of any",
            "mde": f"80 % power, 5 % level, {MDE_RUNS} runs against {MDE_RUNS} (stats.power)",
        },
        "measured": {
            "wall_s": round(time.monotonic() - t0, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "figures": figures,
        "keep_up": keep_up(sweep, tick_rate),
        "runs": by_cell,
        "keep_up_runs": sweep,
        "raw": str(raw),
        "targets": [],
    }
    return record.write(out, "bench-noise", body, repo=REPO)


def figures_text(doc: Mapping[str, Any]) -> str:
    """The figures and the keep-up sweep as terminal tables."""
    fig_rows = [
        [
            f["cell"],
            f["metric"],
            str(f["n"]),
            fmt(f["median"], "{:.4g}"),
            fmt(f["cv_pct"], "{:.2f}"),
            fmt(f["range_pct"], "{:.2f}"),
            fmt(f["mde_pct"], "{:.2f}"),
        ]
        for f in doc["figures"]
    ]
    keep_rows = [
        [
            str(k["players"]),
            fmt(k["msgs_per_s"], "{:.0f}"),
            fmt(k["msgs_share"], "{:.3f}"),
            fmt(k["ticks_share"], "{:.3f}"),
            fmt(k["server_cpu_cores_callgrind"], "{:.3f}"),
            str(k["kept_up"]),
        ]
        for k in doc["keep_up"]
    ]
    head = ["cell", "metric", "runs", "median", "CV %", "range %", "MDE 6v6 %"]
    keep_head = ["players", "msgs/s", "msgs share", "ticks share", "cg cores", "kept up"]
    return (
        record.text_table(head, fig_rows)
        + "\n\ncallgrind keep-up\n"
        + record.text_table(keep_head, keep_rows)
    )


def fmt(value: float | None, pattern: str) -> str:
    """value formatted by pattern, or the tables' mark of a missing value."""
    return record.MISSING if value is None else pattern.format(value)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=options.positive_int, default=RUNS, help=f"default {RUNS}")
    p.add_argument(
        "--duration-s",
        type=options.seconds(0, True),
        default=DURATION_S,
        help=f"window (default {DURATION_S:g})",
    )
    p.add_argument("--players", type=options.positive_int, default=PLAYERS)
    p.add_argument(
        "--keep-up",
        type=options.counts,
        default=list(KEEP_UP_PLAYERS),
        help="player counts of the callgrind keep-up sweep (default 20,50,100,200)",
    )
    p.add_argument("--no-keep-up", action="store_true", help="skip the keep-up sweep")
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "noise.json")
    p.add_argument("--raw-dir", type=Path, default=options.DATA / "bench-runs")


def main(args: argparse.Namespace) -> int:
    why = callgrind.unavailable()
    if why is not None:
        print(f"netstick bench noise: callgrind cells cannot run: {why}", file=sys.stderr)
        return 2
    doc = run(
        args.out,
        args.raw_dir,
        runs=args.runs,
        duration_s=args.duration_s,
        players=args.players,
        keep_up_players=[] if args.no_keep_up else args.keep_up,
    )
    print(figures_text(doc))
    print(f"results in {args.out}")
    return 0
