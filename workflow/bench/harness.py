"""bench-harness: the harness's own costs, measured through real runs (data/bench/harness.json).

- overhead per run: everything outside the measurement window (sandbox, server READY, all
  players connected, stop, collect), for 200 players, repeated;
- monitor cost: the psutil sampler's CPU as a share of one core at 0.5 s, and the jitter of its
  sample times;
- emulator: RTT added by the user-space emulator in pass-through (lan-emulated against lan),
  the error of an injected 25 ms each way at p50, and 200 players at 60 Hz through it: its CPU
  and drops.

Run by root, `--as-user USER` runs the emulator's cells a second time as that unprivileged user,
interleaved with root's (workflow/bench/as_user.py): such runs build their namespaces in a user
namespace (isolation userns), and the record holds their figures beside root's (`as_user`, and
`userns_*` targets). Run by a user who is not root, the bench measures that user's runs; the
record states each side's isolation.

    netstick bench harness [--as-user USER] [--emulator-only]   -> data/bench/harness.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from monitors.sampler import read_monitor
from prototypes.contract.logs import read_rtt_logs
from workflow import layout
from workflow.bench import as_user, options, record
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
    # isolation netns: as root the run's own namespaces; as a user who is not root the harness
    # builds the same in a user namespace (isolation userns).
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


EMULATOR_TARGETS = (
    "emulator_added_rtt_p50_ms",
    "emulator_delay_error_p50_ms",
    "emulator_cpu_cores_200",
)


@dataclass
class Runner:
    """Runs a cell into raw/<name>, in this process or as another user, and keeps each run's
    wall time as its caller saw it (a user's run includes starting its user namespace)."""

    raw: Path
    progress: Callable[[str], None]
    user: str | None = None
    repo: Path = REPO
    wall_s: dict[str, float] = field(default_factory=dict)

    def __call__(self, cell: dict[str, Any], name: str) -> Path:
        out = self.raw / name
        self.progress(f"{name} ..." if self.user is None else f"{name} (as {self.user}) ...")
        started = time.monotonic()
        if self.user is None:
            res = harness.run_cell(cell, out)
            status, detail = res.status, f"{res.reason}: {res.detail}"
        else:
            status, detail = as_user.run_cell(self.user, cell, out, self.repo)
        self.wall_s[name] = time.monotonic() - started
        if status != "ok":
            who = "" if self.user is None else f" as {self.user}"
            raise RuntimeError(f"{name}{who}: {status}: {detail}")
        return out


def _overhead(
    run: Runner, repetitions: int, duration_s: float, runs: dict[str, Any], prefix: str = ""
) -> dict[str, Any]:
    overheads, outside, phases, sampler_pct, jitter = [], [], [], [], []
    for i in range(repetitions):
        cell = _cell("udp", 200, "lan", run_id=f"r{i + 1}", duration_s=duration_s)
        path = run(cell, f"{prefix}overhead-udp-200-r{i + 1}")
        meta = json.loads((path / "meta.json").read_text())
        overheads.append(meta["overhead_s"])
        # Everything the caller waited for but the measurement: with a user's runs, the user
        # namespace's start too.
        outside.append(run.wall_s[path.name] - meta["phases_s"]["measurement"])
        phases.append(meta["phases_s"])
        mon = meta["monitor"]
        sampler_pct.append(100.0 * mon["sampler_cpu_s"] / mon["sampler_wall_s"])
        jitter += _monitor_jitter_ms(path, 0.5)
        runs[f"{prefix}overhead-r{i + 1}"] = str(path)
    return {
        "overhead_s": overheads,
        "overhead_s_max": max(overheads),
        "overhead_s_median": statistics.median(overheads),
        "outside_window_s": outside,
        "outside_window_s_median": statistics.median(outside),
        "phases_s": phases,
        "monitor_cpu_pct_of_core": max(sampler_pct),
        "monitor_jitter_p99_ms": float(np.percentile(jitter, 99)),
    }


def _emulator(
    runners: dict[str, Runner], repetitions: int, duration_s: float
) -> dict[str, dict[str, Any]]:
    """The emulator's figures per runner (root's own runs, a user's): each repetition runs every
    cell for every runner in turn, so both see the same hour of the machine."""
    delay = {
        "description": "25 ms each way, nothing else",
        "up": {"delay_ms": 25},
        "down": {"delay_ms": 25},
    }
    kinds = {"lan": "lan", "emu": "lan-emulated", "delay25": delay}
    rtt: dict[str, dict[str, list[float]]] = {r: {k: [] for k in kinds} for r in runners}
    isolation: dict[str, set[str]] = {r: set() for r in runners}
    for i in range(repetitions):
        for kind, profile in kinds.items():
            for label, run in runners.items():
                cell = _cell("udp", 50, profile, run_id=f"r{i + 1}", duration_s=duration_s)
                path = run(cell, f"{_prefix(label)}{kind}-udp-50-r{i + 1}")
                rtt[label][kind].append(_rtt_p50_ms(path))
                isolation[label].add(json.loads((path / "meta.json").read_text())["isolation"])
    figures: dict[str, dict[str, Any]] = {}
    for label, run in runners.items():
        got = rtt[label]
        path = run(
            _cell("udp", 200, "lan-emulated", duration_s=duration_s), f"{_prefix(label)}emu-udp-200"
        )
        meta = json.loads((path / "meta.json").read_text())
        isolation[label].add(meta["isolation"])
        emu_stats = meta.get("emulator") or {}
        cpu_s = emu_stats.get("cpu_s")
        wall_s = (meta["end_unix_ns"] - meta["start_unix_ns"]) / 1e9
        figures[label] = {
            "isolation": sorted(isolation[label]),
            "lan_rtt_p50_ms": got["lan"],
            "lan_emulated_rtt_p50_ms": got["emu"],
            "emulator_added_rtt_p50_ms": statistics.median(got["emu"])
            - statistics.median(got["lan"]),
            "delay_error_p50_ms": [v - 50.0 for v in got["delay25"]],
            "emulator_delay_error_p50_ms": max(abs(v - 50.0) for v in got["delay25"]),
            "emulator_cpu_cores_200": cpu_s / wall_s if cpu_s is not None else None,
            "emulator_200": {
                "stats": emu_stats,
                "window_s": (meta["window_end_unix_ns"] - meta["window_start_unix_ns"]) / 1e9,
                "rtt_p50_ms": _rtt_p50_ms(path),
                "note": "cpu_s is the emulator's getrusage over its whole life (sandbox start "
                "to stop), divided by the run's wall time: an upper bound of its cost during "
                "the window",
            },
        }
    return figures


def _prefix(label: str) -> str:
    return "" if label == "root" else f"{label}-"


def run(
    out: Path,
    raw: Path,
    repo: Path,
    repetitions: int = 3,
    progress: Callable[[str], None] = print,
    user: str | None = None,
    emulator_only: bool = False,
    duration_s: float = 6,
) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    raw = raw / stamp
    measured: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    targets = dict(TARGETS)
    own = Runner(raw, progress, repo=repo)
    if not emulator_only:
        measured.update(_overhead(own, repetitions, duration_s, runs))
    else:
        targets = {k: v for k, v in TARGETS.items() if k in EMULATOR_TARGETS}
    runners = {"root" if os.geteuid() == 0 else "self": own}
    if user is not None:
        uid = as_user.check(user, repo)
        runners["user"] = Runner(raw, progress, user=user, repo=repo)
    figures = _emulator(runners, repetitions, duration_s)
    mine = figures.pop("root", None) or figures.pop("self")
    measured.update(mine)
    if user is not None:
        theirs = figures["user"]
        if theirs["isolation"] != ["userns"]:
            raise RuntimeError(
                f"the runs as {user} got isolation {theirs['isolation']}, not userns: user "
                "namespaces are not available to them (sysctl user.max_user_namespaces, unshare)"
            )
        measured["as_user"] = {"user": user, "uid": uid, **theirs}
        if not emulator_only:
            # The user's runs start a child in a user namespace: what that adds per run.
            measured["as_user"]["overhead"] = _overhead(
                runners["user"], repetitions, duration_s, runs, prefix="user-"
            )
        for metric in EMULATOR_TARGETS:
            measured[f"userns_{metric}"] = theirs[metric]
            op, threshold, what = TARGETS[metric]
            targets[f"userns_{metric}"] = (op, threshold, f"{what}, as an unprivileged user")
    body = {
        "measured": measured,
        "runs": runs,
        "targets": target_rows(measured, targets),
        "settings": {
            "repetitions": repetitions,
            "duration_s": duration_s,
            "emulator_only": emulator_only,
            "as_user": user,
        },
    }
    return record.write(out, "bench-harness", body, repo=repo)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "harness.json")
    p.add_argument("--raw-dir", type=Path, default=options.DATA / "raw" / "bench-harness")
    p.add_argument("--repetitions", type=options.positive_int, default=3)
    p.add_argument(
        "--duration-s", type=options.seconds(0, strict=True), default=6.0,
        help="each run's measurement window (default 6)",
    )  # fmt: skip
    p.add_argument(
        "--as-user", metavar="USER",
        help="as root: also run the emulator's cells as this unprivileged user (isolation "
        "userns), interleaved with root's, and record their figures beside root's",
    )  # fmt: skip
    p.add_argument(
        "--emulator-only", action="store_true",
        help="measure the emulator only (not the overhead per run or the monitor's cost)",
    )  # fmt: skip


def main(args: argparse.Namespace) -> int:
    try:
        doc = run(
            args.out, args.raw_dir, REPO, args.repetitions, user=args.as_user,
            emulator_only=args.emulator_only, duration_s=args.duration_s,
        )  # fmt: skip
    except as_user.UserError as exc:
        print(f"netstick bench harness: {exc}", file=sys.stderr)
        return 2
    print(targets_text(doc["targets"]))
    print(f"results in {args.out}")
    return 0
