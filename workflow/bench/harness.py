"""bench-harness: the harness's own costs, measured through real runs (data/bench/harness.json).

- overhead per run: everything outside the measurement window (sandbox, server READY, all
  players connected, stop, collect), for 200 players, repeated;
- monitor cost: the psutil sampler's CPU as a share of one core at 0.5 s, and the jitter of its
  sample times;
- emulator: RTT added by the user-space emulator in pass-through (lan-emulated against lan),
  the error of an injected 25 ms each way at p50, and 200 players at 60 Hz through it: its CPU
  and drops.

    netstick bench harness   -> data/bench/harness.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from monitors.sampler import read_monitor
from prototypes.contract.logs import read_rtt_logs
from workflow import layout
from workflow.bench import options, record
from workflow.bench.targets import target_rows, targets_text
from workflow.files import REPO
from workflow.harness import cell as cells
from workflow.harness import run as harness

TARGETS = {
    "overhead_s_max": ("<=", 3.0, "overhead per run (all phases but the measurement), 200 players"),
    "monitor_cpu_pct_of_core": ("<=", 1.0, "sampler CPU at 0.5 s sampling, % of one core"),
    "monitor_jitter_p99_ms": ("<=", 10.0, "sample timing jitter p99"),
    "emulator_added_rtt_p50_ms": ("<=", 0.3, "RTT p50 added by the emulator in pass-through"),
    "emulator_delay_error_p50_ms": ("<=", 0.3, "|RTT p50 - 50 ms| with 25 ms injected each way"),
    "emulator_cpu_cores_200": ("<=", 1.0, "emulator CPU, 200 players x 60 Hz stream"),
}


def _cell(transport: str, players: int, profile: str | dict[str, Any], **kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "campaign": "bench-harness",
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": transport,
        "players": players,
        "workload": "stream",
        "params": {"size": 100, "rate": 60},
        "duration_s": 6,
        "network_profile": profile,
        "isolation": "netns",
        "sample_interval_s": 0.5,
    }
    doc.update(kw)
    cell = cells.validate(doc)
    cell.setdefault("cell_id", layout.derive_cell_id(cell))  # the harness names runs by it
    return cell


def _rtt_p50_ms(run: Path, kind: str = "net") -> float:
    rtt = read_rtt_logs(run / "logs")
    vals = rtt.rtt_us[rtt.kind == kind]
    return float(np.percentile(vals, 50)) / 1000.0


def _monitor_jitter_ms(run: Path, interval_s: float) -> list[float]:
    """|gap between consecutive samples - interval| of the server's rows, in ms."""
    times = [s.t_unix_ns for s in read_monitor(run) if s.proc == "server"]
    gaps = np.diff(np.array(times, dtype=np.int64)) / 1e6
    return [abs(g - interval_s * 1000) for g in gaps.tolist()]


def _run(cell: dict[str, Any], raw: Path, name: str, progress: Callable[[str], None]) -> Path:
    out = raw / name
    progress(f"{name} ...")
    res = harness.run_cell(cell, out)
    if res.status != "ok":
        raise RuntimeError(f"{name}: {res.reason}: {res.detail}")
    return out


def run(
    out: Path,
    raw: Path,
    repo: Path,
    repetitions: int = 3,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    raw = raw / stamp
    measured: dict[str, Any] = {}
    runs: dict[str, Any] = {}

    overheads, phases, sampler_pct, jitter = [], [], [], []
    for i in range(repetitions):
        run = _run(
            _cell("udp", 200, "lan", run_id=f"r{i + 1}"),
            raw,
            f"overhead-udp-200-r{i + 1}",
            progress,
        )
        meta = json.loads((run / "meta.json").read_text())
        overheads.append(meta["overhead_s"])
        phases.append(meta["phases_s"])
        mon = meta["monitor"]
        sampler_pct.append(100.0 * mon["sampler_cpu_s"] / mon["sampler_wall_s"])
        jitter += _monitor_jitter_ms(run, 0.5)
        runs[f"overhead-r{i + 1}"] = str(run)
    measured["overhead_s"] = overheads
    measured["overhead_s_max"] = max(overheads)
    measured["overhead_s_median"] = statistics.median(overheads)
    measured["phases_s"] = phases
    measured["monitor_cpu_pct_of_core"] = max(sampler_pct)
    measured["monitor_jitter_p99_ms"] = float(np.percentile(jitter, 99))

    lan, emu = [], []
    for i in range(repetitions):
        a = _run(_cell("udp", 50, "lan", run_id=f"r{i + 1}"), raw, f"lan-udp-50-r{i + 1}", progress)
        b = _run(
            _cell("udp", 50, "lan-emulated", run_id=f"r{i + 1}"),
            raw,
            f"emu-udp-50-r{i + 1}",
            progress,
        )
        lan.append(_rtt_p50_ms(a))
        emu.append(_rtt_p50_ms(b))
    measured["lan_rtt_p50_ms"] = lan
    measured["lan_emulated_rtt_p50_ms"] = emu
    measured["emulator_added_rtt_p50_ms"] = statistics.median(emu) - statistics.median(lan)

    delay = {
        "description": "25 ms each way, nothing else",
        "up": {"delay_ms": 25},
        "down": {"delay_ms": 25},
    }
    errors = []
    for i in range(repetitions):
        r = _run(
            _cell("udp", 50, delay, run_id=f"r{i + 1}"), raw, f"delay25-udp-50-r{i + 1}", progress
        )
        errors.append(_rtt_p50_ms(r) - 50.0)
    measured["delay_error_p50_ms"] = errors
    measured["emulator_delay_error_p50_ms"] = max(abs(e) for e in errors)

    r = _run(_cell("udp", 200, "lan-emulated"), raw, "emu-udp-200", progress)
    meta = json.loads((r / "meta.json").read_text())
    emu_stats = meta.get("emulator") or {}
    window_s = (meta["window_end_unix_ns"] - meta["window_start_unix_ns"]) / 1e9
    cpu_s = emu_stats.get("cpu_s")
    wall_s = (meta["end_unix_ns"] - meta["start_unix_ns"]) / 1e9
    measured["emulator_cpu_cores_200"] = cpu_s / wall_s if cpu_s is not None else None
    measured["emulator_200"] = {
        "stats": emu_stats,
        "window_s": window_s,
        "rtt_p50_ms": _rtt_p50_ms(r),
        "note": "cpu_s is the emulator's getrusage over its whole life (sandbox start to stop), "
        "divided by the run's wall time: an upper bound of its cost during the window",
    }

    body = {"measured": measured, "runs": runs, "targets": target_rows(measured, TARGETS)}
    return record.write(out, "bench-harness", body, repo=repo)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "harness.json")
    p.add_argument("--raw-dir", type=Path, default=options.DATA / "raw" / "bench-harness")
    p.add_argument("--repetitions", type=options.positive_int, default=3)


def main(args: argparse.Namespace) -> int:
    doc = run(args.out, args.raw_dir, REPO, args.repetitions)
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
