"""Planted regressions, measured: the size of a planted server-CPU regression is found by
measuring, never assumed from the flag.

The reference server's benchmark flag -plant-cpu-ns-per-msg N (prototype.yaml benchmark_flags;
refused outside a plan made for a benchmark, workflow/campaign/benchmark.py) makes every message
it receives cost N ns of calibrated, deterministic CPU work. What that adds to the server's CPU
per message depends on the machine and the load, so:

- `calibrate` measures the unplanted server's CPU per message at a fixed load (one cell of the
  reference through the harness, a few short runs) and derives the N that should add a target
  percentage;
- `check` runs planted and unplanted servers interleaved, in a seeded random order within each
  pair (drift of the machine falls on both alike), and reports the measured increase with its
  bootstrap interval (stats.compare.ratio_of_medians).

CPU per message (`cpu_per_msg`) is the stats stage's server_cpu_us_per_msg of the run
(stats.runs_table, stats.per_message: the server's monitor.csv CPU seconds over the window over
the messages of server.ticks.csv, msgs_in + msgs_out, in the same span), so a bench's planted
size and a campaign's column are one measure. The plant works on received messages only, so
N = target x CPU per message / the received share (msgs_in over msgs_in + msgs_out of the
window's ticks).

The fixed load is the nightly's cell (TCP, 100 players, active): at 20 players the server used
about 0.07 s of CPU in a 2.5 s span, which /proc's 10 ms CPU clock resolves to +-14 % per run;
at 100 players about 0.36 s, +-3 %.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prototypes.contract.logs import read_ticks_csv
from stats import runs_table
from stats.compare import ratio_of_medians
from workflow.files import REPO, read_json
from workflow.harness import cell as cells
from workflow.harness.run import run_cell

PLANT_FLAG = "plant-cpu-ns-per-msg"
REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
# The fixed load: the nightly's cell (active, its defaults, 100 players, TCP; see the module's
# doc), server and clients pinned to a CPU each so that neither takes the other's core.
TRANSPORT = "tcp"
PLAYERS = 100
WORKLOAD = "active"
PINNING = {"server": [0], "clients": [1]}
DURATION_S = 4.0
Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


@dataclass(frozen=True, slots=True)
class CpuPerMsg:
    """The server's CPU per message over one run's window and the messages of that window."""

    cpu_us_per_msg: float  # stats.runs_table's server_cpu_us_per_msg
    msgs_in: int
    msgs_out: int

    @property
    def received_share(self) -> float:
        """msgs_in / (msgs_in + msgs_out): the share of messages the plant works on."""
        return self.msgs_in / (self.msgs_in + self.msgs_out)


def cpu_per_msg(run_dir: Path) -> CpuPerMsg | None:
    """The server's CPU per message of a finished run (see the module's doc); None when the
    stats stage cannot tell it (too few samples) or the window holds no message."""
    data = runs_table.read_run_dir(run_dir)
    cpu = runs_table.measure(data).get("server_cpu_us_per_msg")
    rows = [
        r
        for r in read_ticks_csv(run_dir / "logs" / "server.ticks.csv")
        if data.window.contains_ns(int(r["t_unix_ns"]))
    ]
    msgs_in = sum(int(r["msgs_in"]) for r in rows)
    msgs_out = sum(int(r["msgs_out"]) for r in rows)
    if cpu is None or msgs_in == 0:
        return None
    return CpuPerMsg(float(cpu), msgs_in, msgs_out)


def plant_cell(
    ns_per_msg: float,
    repetition: int,
    *,
    transport: str = TRANSPORT,
    players: int = PLAYERS,
    duration_s: float = DURATION_S,
    pin: bool = True,
) -> dict[str, Any]:
    """The validated cell of one run at the fixed load; ns_per_msg > 0 plants (the seed is the
    repetition, so a planted run and its unplanted partner drive the same workload)."""
    doc: dict[str, Any] = {
        "campaign": "bench-plant",
        "cell_id": f"plant-{transport}-p{players}-{ns_per_msg:g}ns",
        "prototype": str(REFERENCE_MANIFEST),
        "transport": transport,
        "players": players,
        "workload": WORKLOAD,
        "duration_s": duration_s,
        "network_profile": "lan",
        "placement": "local",  # pinning names this machine's CPUs
        "run_id": f"r{repetition}",
        "seed": repetition,
    }
    if ns_per_msg > 0:
        doc["extra_server_flags"] = [f"-{PLANT_FLAG}", f"{ns_per_msg:.1f}"]
    if pin:
        doc["cpu_pinning"] = PINNING
    return cells.validate(doc, f"bench-plant cell {ns_per_msg:g} ns/r{repetition}")


@dataclass(frozen=True, slots=True)
class Measured:
    """One run: what was planted, where it ran, and the server's CPU per message."""

    ns_per_msg: float
    run_dir: str
    cpu: CpuPerMsg
    plant: dict[str, Any]  # the server's meta.json "plant": what it planted and its calibration


def measure_run(cell: dict[str, Any], out: Path) -> Measured:
    """Run one cell through the harness into out and measure it; RuntimeError naming the run
    when it failed or its window holds too little to measure."""
    outcome = run_cell(cell, out)
    if outcome.status != "ok":
        raise RuntimeError(f"{out}: run failed ({outcome.reason}): {outcome.detail}")
    cpu = cpu_per_msg(outcome.path)
    if cpu is None:
        raise RuntimeError(f"{outcome.path}: too few server samples or messages in the window")
    server_meta = read_json(outcome.path / "logs" / "server.meta.json") or {}
    flags = cell.get("extra_server_flags", [])
    ns = float(flags[1]) if flags else 0.0
    return Measured(ns, str(outcome.path), cpu, dict(server_meta.get("plant") or {}))


@dataclass(frozen=True, slots=True)
class Calibration:
    """The unplanted server's CPU per message at the fixed load and the N derived from it."""

    target_pct: float
    ns_per_msg: float  # the N that should add target_pct to the server's CPU per message
    baseline_cpu_us_per_msg: float  # median over the runs
    received_share: float  # median over the runs
    runs: list[Measured]

    def to_doc(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["runs_cpu_us_per_msg"] = [r.cpu.cpu_us_per_msg for r in self.runs]
        return doc


def calibrate(
    target_pct: float,
    out: Path,
    *,
    runs: int = 3,
    duration_s: float = DURATION_S,
    pin: bool = True,
    progress: Progress = _quiet,
) -> Calibration:
    """Measure the unplanted server's CPU per message in `runs` runs at the fixed load (into
    out/baseline-r<k>/) and derive N = target_pct/100 x its median / the received share."""
    if not 0 < target_pct < 1000:
        raise ValueError(f"target_pct {target_pct}: expected a percentage in (0, 1000)")
    measured = []
    for k in range(1, runs + 1):
        cell = plant_cell(0, k, duration_s=duration_s, pin=pin)
        measured.append(measure_run(cell, out / f"baseline-r{k}"))
        progress(f"baseline r{k}: {measured[-1].cpu.cpu_us_per_msg:.2f} µs CPU per message")
    base_us = statistics.median(m.cpu.cpu_us_per_msg for m in measured)
    share = statistics.median(m.cpu.received_share for m in measured)
    ns = target_pct / 100 * base_us * 1e3 / share
    return Calibration(target_pct, round(ns, 1), base_us, share, measured)


@dataclass(frozen=True, slots=True)
class Check:
    """Planted against unplanted, measured interleaved: the increase of the server's CPU per
    message in per cent, with its bootstrap interval."""

    ns_per_msg: float
    increase_pct: float
    increase_low_pct: float
    increase_high_pct: float
    level: float
    note: str | None
    unplanted: list[Measured]
    planted: list[Measured]

    def to_doc(self) -> dict[str, Any]:
        doc = asdict(self)
        for group in ("unplanted", "planted"):
            doc[f"{group}_cpu_us_per_msg"] = [m.cpu.cpu_us_per_msg for m in getattr(self, group)]
        return doc


def interleaved_order(pairs: int, seed: int) -> list[tuple[int, bool]]:
    """(repetition, planted) for every run: pair by pair, which of the two goes first drawn
    with a seeded random generator (randomised interleaving)."""
    rng = random.Random(seed)
    order: list[tuple[int, bool]] = []
    for k in range(1, pairs + 1):
        first = rng.random() < 0.5
        order += [(k, first), (k, not first)]
    return order


def check(
    ns_per_msg: float,
    out: Path,
    *,
    pairs: int = 3,
    duration_s: float = DURATION_S,
    pin: bool = True,
    seed: int = 0,
    baseline: Sequence[Measured] = (),
    progress: Progress = _quiet,
) -> Check:
    """Measure `pairs` planted and unplanted runs interleaved (into out/planted-r<k>/ and
    out/unplanted-r<k>/) and the increase median(planted) / median(unplanted) - 1 of the
    server's CPU per message. baseline: unplanted runs measured before (e.g. the calibration's),
    added to the unplanted group."""
    if ns_per_msg <= 0:
        raise ValueError(f"ns_per_msg {ns_per_msg}: expected > 0 (something planted)")
    unplanted, planted = list(baseline), []
    for k, plants in interleaved_order(pairs, seed):
        name = f"{'planted' if plants else 'unplanted'}-r{k}"
        cell = plant_cell(ns_per_msg if plants else 0, k, duration_s=duration_s, pin=pin)
        m = measure_run(cell, out / name)
        (planted if plants else unplanted).append(m)
        progress(f"{name}: {m.cpu.cpu_us_per_msg:.2f} µs CPU per message")
    ratio = ratio_of_medians(
        [m.cpu.cpu_us_per_msg for m in unplanted], [m.cpu.cpu_us_per_msg for m in planted]
    )
    return Check(
        ns_per_msg,
        (ratio.estimate - 1) * 100,
        (ratio.low - 1) * 100,
        (ratio.high - 1) * 100,
        ratio.level,
        ratio.note,
        unplanted,
        planted,
    )
