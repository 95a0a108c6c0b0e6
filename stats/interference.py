"""What else used the machine during a run's measurement window, and whether the run was
measured beside a busy neighbour.

From the sampler's rows (monitors.sampler), over the window (stats.window):

    others_cpu_cores = (host busy CPU s - the run's trees' CPU s - the sampler's CPU s) / wall s
    steal_cores      = steal CPU s / wall s

The run's trees are every process root the harness named: the server, the client processes and,
when a profile needs it, the emulator (netemu; the harness samples it as "emulator"), so the
emulator's load counts as the run's, never as a neighbour's. Host busy is user + nice + system +
irq + softirq of all cores; what is left after the run and the sampler is the harness's other
threads, Snakemake, the kernel's threads and interrupts, and whatever else ran: the floor of a
quiet run is measured below. All of them are CPU seconds between the same first and last host
sample inside the window, so a client that exits a little before the window ends is not mistaken
for a neighbour (its last reading stays).

Under SLURM each process is sampled on its own node (monitors.wrap, read back as node_row
names): the derivation is made per node (the processes on one node found from the srun
--nodelist of meta.json's launch_prefixes) and the busiest node is the run's.

A run is flagged (interference) when others_cpu_cores or steal_cores is above its threshold; the
reason says which and by how much. A run without sampler rows in its window is neither flagged
nor cleared (null).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

from monitors.sampler import HOST, RESERVED, SAMPLER, STEAL, Sample, node_row
from stats.resources import cpu_s_between
from stats.window import NS_PER_S, Window

# Thresholds, measured on the 2-core VM this project is developed on (README, "Interference
# detection"), with the reference prototype (4 s windows; tcp 8 players, udp 32 and 200, quic
# 64, tcp and udp 16 through the emulator): 23 quiet runs left others_cpu_cores of at most
# OTHERS_FLOOR_CORES (0 to 0.077: the harness's other threads, the kernel; a Snakemake that
# waits for its job uses none); a run beside a one-core Python busy loop showed 1.00-1.17
# cores, beside a 40 % duty-cycle loop 0.26-0.39, beside other test suites that happened to run
# on the machine 0.38-1.10 (and 0.15 beside a 0.1-core grep, rightly not flagged). Host CPU
# is tick-sampled (/proc/stat) while the trees' is exact, and ticks miss part of the run's own
# timer-driven bursts: before clipping at 0 the quiet runs read down to -0.17 cores at 0.8
# cores of run load, so a neighbour can read up to that much low. The threshold sits well above
# the floor and below what a 40 % neighbour showed.
OTHERS_FLOOR_CORES: Final = 0.08
OTHERS_MAX_CORES: Final = 0.25
# Steal stayed at 0-0.003 cores in every run measured here; a neighbour VM taking a tenth of a
# core moves the run's CPU-bound metrics by more than the few per cent the nightly looks for.
STEAL_MAX_CORES: Final = 0.1


@dataclass(frozen=True, slots=True)
class Interference:
    """What else used the machine in one run's window, and the verdict (None: unknown)."""

    others_cpu_cores: float | None
    steal_cores: float | None
    interference: bool | None
    reason: str | None

    def columns(self) -> dict[str, Any]:
        """The runs table's columns (stats.tables.RUNS)."""
        return {
            "others_cpu_cores": None
            if self.others_cpu_cores is None
            else round(self.others_cpu_cores, 4),
            "steal_cores": None if self.steal_cores is None else round(self.steal_cores, 4),
            "interference": self.interference,
            "interference_reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class _Machine:
    """The rows that describe one machine: its host and steal rows, the samplers that ran
    there, and the run's process trees sampled there."""

    node: str | None
    host: str
    steal: str
    samplers: tuple[str, ...]
    trees: tuple[str, ...]


def _node_of(name: str, meta: Mapping[str, Any]) -> str:
    """The node a process of a SLURM run ran on: its srun prefix's --nodelist (else its own
    name, a node of its own)."""
    prefix = (meta.get("launch_prefixes") or {}).get(name) or []
    for arg in prefix:
        if isinstance(arg, str) and arg.startswith("--nodelist="):
            return arg.removeprefix("--nodelist=")
    return name


def _machines(procs: set[str], meta: Mapping[str, Any]) -> list[_Machine]:
    """One machine for a local run; one per node for a run whose processes were sampled on
    their nodes (node_row names such as host@server)."""
    node_names = sorted({p.split("@", 1)[1] for p in procs if "@" in p})
    if not node_names:
        trees = tuple(sorted(p for p in procs if p not in RESERVED))
        return [_Machine(None, HOST, STEAL, (SAMPLER,), trees)]
    by_node: dict[str, list[str]] = {}
    for name in node_names:
        by_node.setdefault(_node_of(name, meta), []).append(name)
    return [
        _Machine(
            node,
            node_row(HOST, names[0]),
            node_row(STEAL, names[0]),
            tuple(node_row(SAMPLER, n) for n in names),
            tuple(names),
        )
        for node, names in sorted(by_node.items())
    ]


def _used(samples: list[Sample], m: _Machine, window: Window) -> tuple[float, float | None] | None:
    """(others_cpu_cores, steal_cores) of one machine over the window; None without two host
    samples in it."""
    host = cpu_s_between(samples, m.host, window.start_unix_ns, window.end_unix_ns)
    if host is None:
        return None
    busy_s, t0, t1 = host
    wall_s = (t1 - t0) / NS_PER_S
    if wall_s <= 0:
        return None
    # The same span for every row: the host's first and last sample in the window.
    spent = [cpu_s_between(samples, p, t0, t1 + 1) for p in (*m.trees, *m.samplers)]
    run_s = sum(x[0] for x in spent if x is not None)
    # Tree and host CPU are read from different counters (per task, per core): their small
    # disagreement can leave a quiet machine a little below zero, which is no one's use.
    others = max(0.0, (busy_s - run_s) / wall_s)
    steal = cpu_s_between(samples, m.steal, t0, t1 + 1)
    return others, None if steal is None else max(0.0, steal[0] / wall_s)


def judge(
    others_cpu_cores: float | None, steal_cores: float | None
) -> tuple[bool | None, str | None]:
    """(flagged, why) from the two means; (None, None) when neither is known."""
    if others_cpu_cores is None and steal_cores is None:
        return None, None
    reasons = []
    if others_cpu_cores is not None and others_cpu_cores > OTHERS_MAX_CORES:
        reasons.append(
            f"others used {others_cpu_cores:.2f} cores on average (threshold {OTHERS_MAX_CORES:g})"
        )
    if steal_cores is not None and steal_cores > STEAL_MAX_CORES:
        reasons.append(
            f"the hypervisor stole {steal_cores:.2f} cores on average "
            f"(threshold {STEAL_MAX_CORES:g})"
        )
    return bool(reasons), "; ".join(reasons) or None


def measure(samples: Iterable[Sample], window: Window, meta: Mapping[str, Any]) -> Interference:
    """What else used the machine in the run's window; under SLURM the largest of each over
    the nodes, the reason naming the nodes."""
    rows = list(samples)
    per_node = []
    for m in _machines({s.proc for s in rows}, meta):
        used = _used(rows, m, window)
        if used is not None:
            per_node.append((m.node, *used))
    if not per_node:
        return Interference(None, None, None, None)
    node_o, others, _ = max(per_node, key=lambda x: x[1])
    stolen = [(s, n) for n, _, s in per_node if s is not None]
    steal, node_s = max(stolen, key=lambda x: x[0]) if stolen else (None, None)
    flagged, why = judge(others, steal)
    if why is not None and len(per_node) > 1:
        where = [f"others on {node_o}"] if others > OTHERS_MAX_CORES else []
        if steal is not None and steal > STEAL_MAX_CORES:
            where.append(f"steal on {node_s}")
        why = f"{why} ({', '.join(where)})"
    return Interference(others, steal, flagged, why)


# -- a runs table's flagged runs (stats.tables.RUNS: interference) --------------------------------


def interfered(runs: pl.DataFrame) -> pl.Expr:
    """The ok runs flagged as measured beside a busy neighbour (none in an older runs table
    without the column, nor where the flag is unknown)."""
    if "interference" not in runs.columns:
        return pl.lit(False)
    return (pl.col("status") == "ok") & pl.col("interference").cast(pl.Boolean).fill_null(False)


def usable(runs: pl.DataFrame) -> pl.DataFrame:
    """The ok runs a comparison or decision may use: not measured beside a busy neighbour."""
    return runs.filter((pl.col("status") == "ok") & ~interfered(runs))
