"""bench-sensitivity: what the nightly's design can see, proven with planted regressions and
identical code (data/bench/sensitivity.json).

Conditions, each measured once per round, rounds interleaved in a seeded random order (the
nightly's own order, workflow/campaign/order.py, puts the versions of a transport side by side
the same way):

- `lan-a`, `lan-b`: the nightly's RTT cell (reference over TCP, 100 active players, 12 s, lan),
  identical code twice: the A/A pair of RTT p50, server CPU and CPU time per message;
- `cg-a`, `cg-b`: the nightly's instructions cell (20 active players, 4 s, the server under
  callgrind), identical code twice: the A/A pair of instructions per message;
- `lan-seeds`, `cg-seeds`: those cells as the design until now ran them, a seed of its own per
  run (the others replay one seed per cell kind, as the nightly's rounds now do:
  workflow/campaign/order.py), for the "before" figures and the workload's share of the spread;
- `cg-cpu3`, `cg-cpu5`, `cg-cpu10`: that cell with a planted regression of 3, 5 and 10 % more
  server work per message (-plant-iterations-per-msg: a fixed number of hash iterations per
  received message, sized from a calibration: one run unplanted and one with CALIBRATION_ITERS
  iterations give the instructions one iteration adds per message);
- `emu-0`, `emu-rtt5`, `emu-rtt10`: the RTT cell through the user-space emulator with a one-way
  delay of EMU_BASE_DELAY_US, and with 5 and 10 % of that cell's RTT p50 (measured in a
  calibration run) added to it: the planted RTT regressions, and beside lan the emulator's share
  of RTT's spread. The base delay is there because a delay of 0 forwards each frame at once on the
  emulator's receiving thread while any delay hands it to its sending thread, whose wake-up alone
  added ~60 µs here (a first bench with emu-0 at no delay measured a "5 %" plant at +49 %), and it
  is longer than that wake-up because a frame due before its sender wakes leaves when it wakes,
  whatever its delay (with a base of 20 µs, plants of 9.6 and 19.2 µs measured +1.5 % and
  +3.5 %): base and plants must take the same path and wait out their delays, so that the plant
  adds only its own.

Every planted size is measured from the pool (median planted / median unplanted, with its
interval), never taken from the flag. sensitivity_nights.py then draws nights from the rounds and
decides each with the nightly's code; the record holds the A/A false alarms per cell-night after
confirmation, the share of nights that flag and confirm each plant, and the detectable change per
metric before (the design until now: RTT p50, server CPU and CPU time per message of the 100-player
cell, 6 runs against 6) and after (instructions per message under callgrind; RTT paired by round),
with the targets and, where one is missed, by how much and which noise stops it.

Runs go to data/bench-runs/sensitivity-<stamp>/; the record is rewritten after every round
(complete: false until the last), so an interrupted bench keeps what it measured.

    netstick bench sensitivity [--rounds 12] [--nights 200]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitors import callgrind
from workflow.bench import cells, noise, options, record
from workflow.bench import sensitivity_nights as nights
from workflow.bench.targets import target_rows, targets_text
from workflow.files import REPO, read_json
from workflow.harness import cell as harness_cell
from workflow.harness import environment

ROUNDS = 12
NIGHTS = 200
SEED = 20
CALIBRATION_ITERS = 400
EMU_BASE_DELAY_US = 200.0  # one way, every emulated condition (see the module's doc)
CPU_PLANTS = (3.0, 5.0, 10.0)
RTT_PLANTS = (5.0, 10.0)
RTT_METRICS = ("rtt_net_p50_us", "server_cpu_cores", "server_cpu_us_per_msg")
INSTR = "server_instr_per_msg"
TARGETS = {
    "mde_cpu_per_msg_pct": ("<=", 3.0, "detectable change of the server's CPU work per message"),
    "mde_rtt_p50_pct": ("<=", 5.0, "detectable change of RTT p50 (the decision's, unpaired)"),
    "planted_cpu5_confirmed_share": (">=", 0.80, "nights confirming a planted 5 % CPU regression"),
    "planted_cpu10_confirmed_share": (
        ">=",
        0.99,
        "nights confirming a planted 10 % CPU regression",
    ),
    "aa_false_alarms_per_100_cell_nights": ("<=", 1.0, "identical code, after confirmation"),
}
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition of the pool: its cell's kind and what is planted in it."""

    name: str
    kind: str  # "lan", "emulated" or "callgrind"
    plant_pct: float = 0.0  # the intended size (CPU for callgrind, RTT for emulated)


CONDITIONS = (
    Condition("lan-a", "lan"),
    Condition("lan-b", "lan"),
    Condition("lan-seeds", "lan"),
    Condition("cg-a", "callgrind"),
    Condition("cg-b", "callgrind"),
    Condition("cg-seeds", "callgrind"),
    *(Condition(f"cg-cpu{p:g}", "callgrind", p) for p in CPU_PLANTS),
    Condition("emu-0", "emulated"),
    *(Condition(f"emu-rtt{p:g}", "emulated", p) for p in RTT_PLANTS),
)
METRICS_OF = {"lan": RTT_METRICS, "emulated": ("rtt_net_p50_us",), "callgrind": (INSTR,)}


@dataclass(frozen=True, slots=True)
class Plants:
    """The calibration's answer: instructions one iteration adds per message, and the RTT the
    emulated cell has without a plant."""

    instr_per_msg: float
    instr_per_iteration_per_msg: float
    emulated_rtt_p50_us: float

    def iterations(self, pct: float) -> int:
        return max(1, round(pct / 100 * self.instr_per_msg / self.instr_per_iteration_per_msg))

    def delay_us(self, pct: float) -> float:
        return round(pct / 100 * self.emulated_rtt_p50_us, 1)


def cell_of(c: Condition, run_id: str, plants: Plants | None) -> dict[str, Any]:
    """The validated cell of one run of condition c: one seed for every run of a cell kind
    (the nightly's rounds replay one seed per context), a seed per run for the *-seeds ones."""
    seed_key = f"{c.name}/{run_id}" if c.name.endswith("-seeds") else c.kind
    doc: dict[str, Any] = {
        "campaign": "bench-sensitivity",
        "cell_id": c.name,
        "prototype": str(cells.REFERENCE_MANIFEST),
        "transport": "tcp",
        "players": 100,
        "workload": "active",
        "duration_s": 12.0,
        "network_profile": "lan",
        "placement": "local",  # callgrind's switches reach the server through this machine
        "run_id": run_id,
        "seed": zlib.crc32(seed_key.encode()) % 2**31,
    }
    if c.kind == "callgrind":
        doc.update(players=20, duration_s=4.0, server_profiler="callgrind")
        if c.plant_pct and plants is not None:
            doc["extra_server_flags"] = [
                "-plant-iterations-per-msg",
                str(plants.iterations(c.plant_pct)),
            ]
    if c.kind == "emulated":
        profile: dict[str, Any] = {
            "description": f"lan through the user-space emulator, {EMU_BASE_DELAY_US:g} µs one "
            "way (bench-sensitivity)",
            "force_emulator": True,
        }
        extra_us = plants.delay_us(c.plant_pct) if c.plant_pct and plants is not None else 0.0
        profile["up"] = {"delay_ms": round((EMU_BASE_DELAY_US + extra_us) / 1000, 4)}
        if extra_us:
            profile["description"] += f": a planted RTT regression of {c.plant_pct:g} %"
        doc["network_profile"] = profile
    return harness_cell.validate(doc, f"bench-sensitivity cell {c.name}/{run_id}")


def _calibration_run(
    c: Condition, name: str, raw: Path, flags: Sequence[str] = ()
) -> dict[str, Any]:
    cell = cell_of(c, "r0", None)
    if flags:
        cell = harness_cell.validate(cell | {"extra_server_flags": list(flags)}, name)
    rec = noise.run_once(cell, raw / "calibration" / name)
    if not rec["ok"]:
        raise RuntimeError(f"bench-sensitivity calibration run {name} failed: {rec.get('error')}")
    return rec


def calibrate(raw: Path, progress: Progress) -> tuple[Plants, dict[str, Any]]:
    """One unplanted and one planted callgrind run, one emulated run: the plants' sizes."""
    cg = Condition("cg-calibration", "callgrind")
    base = _calibration_run(cg, "cg-0", raw)
    planted = _calibration_run(
        cg, f"cg-{CALIBRATION_ITERS}", raw, ["-plant-iterations-per-msg", str(CALIBRATION_ITERS)]
    )
    emu = _calibration_run(Condition("emu-calibration", "emulated"), "emu-0", raw)
    i0, i1 = base[INSTR], planted[INSTR]
    if i0 is None or i1 is None or i1 <= i0 or emu["rtt_net_p50_us"] is None:
        raise RuntimeError(
            f"bench-sensitivity calibration: instructions per message {i0} unplanted, {i1} with "
            f"{CALIBRATION_ITERS} iterations, emulated RTT p50 {emu['rtt_net_p50_us']}: expected "
            "the planted run to count more, and an RTT"
        )
    plants = Plants(float(i0), (i1 - i0) / CALIBRATION_ITERS, float(emu["rtt_net_p50_us"]))
    progress(
        f"calibration: {i0:.0f} instr/msg, {plants.instr_per_iteration_per_msg:.2f} per "
        f"iteration; emulated RTT p50 {plants.emulated_rtt_p50_us:.1f} µs"
    )
    doc = {
        "instr_per_msg": plants.instr_per_msg,
        "instr_per_iteration_per_msg": round(plants.instr_per_iteration_per_msg, 4),
        "emulated_rtt_p50_us": plants.emulated_rtt_p50_us,
        "iterations": {f"{p:g}": plants.iterations(p) for p in CPU_PLANTS},
        "delay_us": {f"{p:g}": plants.delay_us(p) for p in RTT_PLANTS},
        "runs": {"cg-0": base, f"cg-{CALIBRATION_ITERS}": planted, "emu-0": emu},
    }
    return plants, doc


def pools(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, dict[str, dict[int, float]]]:
    """metric -> condition -> round -> value, of the ok runs not flagged for interference."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for c in CONDITIONS:
        for rec in records.get(c.name, []):
            if not rec["ok"] or rec.get("interference"):
                continue
            k = int(str(rec["run_id"])[1:])
            for m in METRICS_OF[c.kind]:
                v = rec.get(m)
                if v is not None and math.isfinite(float(v)):
                    out.setdefault(m, {}).setdefault(c.name, {})[k] = float(v)
    return out


def comparisons() -> list[nights.Comparison]:
    """A/A pairs in both directions (a false alarm is a "slower" either way round), and each
    plant against its unplanted condition."""
    out = []
    for m in RTT_METRICS:
        for a, b in (("lan-a", "lan-b"), ("lan-b", "lan-a")):
            out.append(nights.Comparison(f"A/A {m} {b} vs {a}", m, a, b, None))
    for a, b in (("cg-a", "cg-b"), ("cg-b", "cg-a")):
        out.append(nights.Comparison(f"A/A {INSTR} {b} vs {a}", INSTR, a, b, None, "callgrind"))
    for p in CPU_PLANTS:
        out.append(nights.Comparison(f"cpu+{p:g}%", INSTR, "cg-a", f"cg-cpu{p:g}", p, "callgrind"))
    for p in RTT_PLANTS:
        out.append(nights.Comparison(f"rtt+{p:g}%", "rtt_net_p50_us", "emu-0", f"emu-rtt{p:g}", p))
    return out


def _median_mde(last_night: Mapping[str, Any] | None, metric: str) -> float | None:
    """The median over cells of the last real night's detectable change (data/bench/nightly.json)
    for metric, in per cent."""
    cells_ = [c for c in (last_night or {}).get("cells", []) if c.get("metric") == metric]
    vals = [(c["mde_ratio"] - 1) * 100 for c in cells_ if c.get("mde_ratio") is not None]
    return round(statistics.median(vals), 2) if vals else None


def last_night_mde(last_night: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The last real night's median detectable change per metric (data/bench/nightly.json), in
    per cent: the "before" the record quotes beside its own."""
    return {m: _median_mde(last_night, m) for m in ("rtt_net_p50_us", "server_cpu_cores")}


def detectable_table(
    pool: Mapping[str, nights.Pool], last_night: Mapping[str, float | None]
) -> list[dict[str, Any]]:
    """The detectable change per metric before (the design until now) and after, side by side."""
    lan = {m: nights.detectable(pool.get(m, {}), "lan-a", "lan-b") for m in RTT_METRICS}
    before = {m: nights.spread_mde(pool.get(m, {}), "lan-seeds") for m in RTT_METRICS}
    instr = nights.detectable(pool.get(INSTR, {}), "cg-a", "cg-b")
    instr_before = nights.spread_mde(pool.get(INSTR, {}), "cg-seeds")
    emulated = nights.spread_mde(pool.get("rtt_net_p50_us", {}), "emu-0")
    return [
        {
            "metric": "rtt_net_p50_us",
            "before_cell": "lan, 100 players, 12 s, a seed per run, 6 v 6",
            "before_pct": before["rtt_net_p50_us"]["mde_pct"],
            "before_log_sd": before["rtt_net_p50_us"]["log_sd"],
            "before_last_night_median_pct": last_night.get("rtt_net_p50_us"),
            "after_cell": "lan, 100 players, 12 s, one seed, 6 v 6 in rounds",
            "after_pct": lan["rtt_net_p50_us"]["mde_pct"],
            "after_paired_pct": lan["rtt_net_p50_us"]["mde_paired_pct"],
            **{f"spread_{k}": v for k, v in lan["rtt_net_p50_us"].items() if "log_sd" in k},
        },
        {
            "metric": "server CPU per message",
            "before_cell": "server_cpu_cores, lan, 100 players, 12 s, a seed per run, 6 v 6",
            "before_pct": before["server_cpu_cores"]["mde_pct"],
            "before_log_sd": before["server_cpu_cores"]["log_sd"],
            "before_last_night_median_pct": last_night.get("server_cpu_cores"),
            "before_cpu_us_per_msg_pct": before["server_cpu_us_per_msg"]["mde_pct"],
            "one_seed_cpu_us_per_msg_pct": lan["server_cpu_us_per_msg"]["mde_pct"],
            "instr_a_seed_per_run_pct": instr_before["mde_pct"],
            "instr_a_seed_per_run_log_sd": instr_before["log_sd"],
            "after_cell": f"{INSTR}, callgrind, 20 players, 4 s, one seed, 6 v 6 in rounds",
            "after_pct": instr["mde_pct"],
            "after_paired_pct": instr["mde_paired_pct"],
            **{f"spread_{k}": v for k, v in instr.items() if "log_sd" in k},
        },
        {
            # The same RTT cell through the emulator with 200 µs one way: the noise is tens of
            # µs whatever the RTT, so a longer round trip makes the same noise a smaller share.
            "metric": "rtt_net_p50_us (through the emulator)",
            "before_cell": None,
            "before_pct": None,
            "before_last_night_median_pct": None,
            "after_cell": f"emulated, {EMU_BASE_DELAY_US:g} µs one way, 100 players, 12 s, "
            "one seed, 6 v 6 in rounds",
            "after_pct": emulated["mde_pct"],
            "after_paired_pct": None,
            "spread_log_sd": emulated["log_sd"],
        },
    ]


def _pct_of(x: float | None) -> str:
    return "?" if x is None else f"{100 * x:.1f} %"


def shortfalls(
    targets: Sequence[Mapping[str, Any]],
    parts: Mapping[str, Any],
    drawn: Sequence[Mapping[str, Any]],
) -> list[str]:
    """For each target missed: by how much, and which part of the noise stops it (measured)."""
    out = []
    missed = {t["metric"]: t for t in targets if not t["pass"] and t["measured"] is not None}
    if "mde_rtt_p50_pct" in missed:
        t = missed["mde_rtt_p50_pct"]
        out.append(
            f"RTT p50: {t['measured']:.1f} % detectable against a target of {t['threshold']:g} % "
            f"({t['measured'] / t['threshold']:.1f}x); at this spread 5 % needs "
            f"{parts.get('runs_for_5pct_rtt') or '?'} runs a side, not 6. Its run-to-run log "
            f"spread is {_pct_of(parts.get('lan_log_sd'))} with one seed and no emulator: the "
            "machine's scheduling of the players' and the server's threads on 2 shared vCPUs, "
            "since the prototype's own work per message varies "
            f"{_pct_of(parts.get('prototype_instr_log_sd'))} "
            f"(instructions), a seed per run adds {_pct_of(parts.get('rtt_workload_log_sd'))} "
            f"and the emulator {_pct_of(parts.get('emulator_log_sd'))}. The noise is a number of "
            f"µs rather than a share: {parts.get('lan_spread_us')} µs at lan's "
            f"{parts.get('lan_median_us')} µs, {parts.get('emulated_spread_us')} µs at the "
            f"emulated cell's {parts.get('emulated_median_us')} µs."
        )
    for key in ("planted_cpu5_confirmed_share", "planted_cpu10_confirmed_share"):
        if key in missed:
            t = missed[key]
            out.append(
                f"{key}: {t['measured']:.3f} against {t['threshold']:g}: short by "
                f"{t['threshold'] - t['measured']:.3f} of the nights"
            )
    if "aa_false_alarms_per_100_cell_nights" in missed:
        worst = max((d for d in drawn if d["planted_pct"] is None and d["nights"]),
                    key=lambda d: d["confirmed"], default=None)  # fmt: skip
        out.append(
            f"A/A: {missed['aa_false_alarms_per_100_cell_nights']['measured']:.2f} false alarms "
            f"per 100 cell-nights; most in {worst['comparison'] if worst else '?'}"
        )
    if "mde_cpu_per_msg_pct" in missed:
        out.append(
            f"CPU per message: {missed['mde_cpu_per_msg_pct']['measured']:.1f} % detectable "
            "against 3 % (instructions per message under callgrind)"
        )
    return out


def analyse(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    n_nights: int,
    seed: int,
    last_night: Mapping[str, float | None] | None = None,
) -> dict[str, Any]:
    """Everything the record states from the measured runs: planted sizes, drawn nights,
    false alarms, detectable changes, noise parts and the targets' figures."""
    pool = pools(records)
    drawn = [
        nights.draw_nights(pool.get(c.metric, {}), c, n_nights, seed + i)
        for i, c in enumerate(comparisons())
    ]
    sizes = {
        **{f"cpu+{p:g}%": nights.planted_size(pool.get(INSTR, {}), ("cg-a", "cg-b"), f"cg-cpu{p:g}")
           for p in CPU_PLANTS},
        **{f"rtt+{p:g}%": nights.planted_size(pool.get("rtt_net_p50_us", {}), ("emu-0",),
                                              f"emu-rtt{p:g}") for p in RTT_PLANTS},
    }  # fmt: skip
    aa = [d for d in drawn if d["planted_pct"] is None and d["nights"]]
    cell_nights = sum(d["nights"] for d in aa)
    false_alarms = sum(d["confirmed"] for d in aa)
    by_name = {d["comparison"]: d for d in drawn}
    table = detectable_table(pool, last_night or {})
    parts = nights.noise_parts(pool.get("rtt_net_p50_us", {}), ("lan-a", "lan-b"), "emu-0")
    rtt_sd = table[0].get("spread_log_sd")
    # The workload's share: what a seed per run adds to one seed's spread.
    workload = {
        name: math.sqrt(max(0.0, before**2 - one**2)) if before and one else None
        for name, before, one in (
            ("rtt_workload_log_sd", table[0].get("before_log_sd"), rtt_sd),
            ("instr_workload_log_sd", table[1].get("instr_a_seed_per_run_log_sd"),
             table[1].get("spread_log_sd")),
        )
    }  # fmt: skip
    measured = {
        "mde_cpu_per_msg_pct": table[1]["after_pct"],
        "mde_rtt_p50_pct": table[0]["after_pct"],
        "planted_cpu5_confirmed_share": by_name["cpu+5%"]["confirmed_share"],
        "planted_cpu10_confirmed_share": by_name["cpu+10%"]["confirmed_share"],
        "aa_false_alarms_per_100_cell_nights": (
            round(100 * false_alarms / cell_nights, 3) if cell_nights else None
        ),
    }
    interfered = {c: sum(bool(r.get("interference")) for r in recs) for c, recs in records.items()}
    judged = target_rows(measured, TARGETS)
    noise_doc = (
        parts
        | workload
        | {
            "prototype_instr_log_sd": table[1].get("spread_log_sd"),
            "runs_for_5pct_rtt": nights.runs_needed(rtt_sd, 5.0),
        }
    )
    return {
        "planted_sizes": sizes,
        "nights": drawn,
        "false_alarms": {
            "cell_nights": cell_nights,
            "confirmed": false_alarms,
            "flagged": sum(d["flagged"] for d in aa),
        },
        "detectable": table,
        "rtt_noise_parts": noise_doc,
        "runs_interfered": interfered,
        "measured_targets": measured,
        "targets": judged,
        "shortfalls": shortfalls(judged, noise_doc, drawn),
    }


def run(
    out: Path,
    raw: Path,
    *,
    rounds: int = ROUNDS,
    n_nights: int = NIGHTS,
    seed: int = SEED,
    only: Sequence[str] = (),
    progress: Progress = cells.print_progress,
) -> dict[str, Any]:
    """Calibrate, measure the rounds (the record rewritten after each), analyse, write. only:
    measure these conditions again, in rounds among themselves, into the record at out (the
    others' runs kept, and the record says which were measured when)."""
    previous = read_json(out) if only else None
    if only and (not previous or "runs" not in previous):
        raise SystemExit(f"netstick bench sensitivity: --only: {out} holds no record to add to")
    unknown = sorted(set(only) - {c.name for c in CONDITIONS})
    if unknown:
        raise SystemExit(
            f"netstick bench sensitivity: --only: unknown condition(s) {', '.join(unknown)}; "
            f"expected some of {', '.join(c.name for c in CONDITIONS)}"
        )
    measured = [c for c in CONDITIONS if not only or c.name in only]
    raw = raw / time.strftime("sensitivity-%Y%m%dT%H%M%SZ", time.gmtime())
    prov = environment.collect(REPO)
    t0 = time.monotonic()
    plants, calibration = calibrate(raw, progress)
    records: dict[str, list[dict[str, Any]]] = {c.name: [] for c in measured}
    rng = random.Random(seed)
    config = {
        "rounds": rounds,
        "nights": n_nights,
        "seed": seed,
        "night_rounds": nights.NIGHT_ROUNDS,
        "confirm_rounds": nights.CONFIRM_ROUNDS,
        "conditions": [c.name for c in CONDITIONS],
        "cells": {c.name: cell_of(c, "r1", plants) for c in CONDITIONS},
        "order": "rounds: every condition once per round, in a seeded random order",
    }
    body: dict[str, Any] = {"config": config, "calibration": calibration, "complete": False}
    last_night = last_night_mde(read_json(options.BENCH_DIR / "nightly.json"))
    if previous is not None:
        body, prov = (
            merged_record(previous, body, [c.name for c in measured]),
            previous["provenance"],
        )
        last_night = previous.get("last_night_mde_pct") or last_night
        records = {c: list(r) for c, r in previous["runs"].items()} | records
    for k in range(1, rounds + 1):
        for c in rng.sample(measured, len(measured)):
            progress(f"round {k}/{rounds}: {c.name} ...")
            rec = noise.run_once(cell_of(c, f"r{k}", plants), raw / c.name / f"r{k}")
            records[c.name].append(rec)
        body |= {"runs": records, "wall_s": round(time.monotonic() - t0, 1), "raw": str(raw)}
        body["last_night_mde_pct"] = last_night
        record.write(out, "bench-sensitivity", body, prov=prov, repo=REPO)
    body |= analyse(records, n_nights, seed, last_night) | {"complete": True}
    body["wall_s"] = round(time.monotonic() - t0, 1)
    return record.write(out, "bench-sensitivity", body, prov=prov, repo=REPO)


def merged_record(
    previous: Mapping[str, Any], body: dict[str, Any], names: list[str]
) -> dict[str, Any]:
    """The record's body with conditions `names` about to be measured again: their cells and
    this calibration's sizes replace the old ones, the earlier measurement is kept under
    `remeasured` (what was measured when, and where its runs are)."""
    out = {k: v for k, v in previous.items() if k not in ("schema", "benchmark", "provenance")}
    out["config"] = dict(out["config"])
    out["config"]["cells"] = dict(out["config"]["cells"]) | {
        n: body["config"]["cells"][n] for n in names
    }
    out["remeasured"] = [
        *previous.get("remeasured", []),
        {"conditions": names, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "replaced_raw": previous.get("raw"), "calibration": body["calibration"],
         "note": "measured in rounds among themselves, after the other conditions"},
    ]  # fmt: skip
    out["complete"] = False
    return out


def reanalyse(out: Path, n_nights: int, seed: int) -> dict[str, Any]:
    """The record at out analysed again from its runs (its measurements and provenance kept)."""
    doc = read_json(out)
    if not doc or "runs" not in doc:
        raise SystemExit(f"netstick bench sensitivity: {out}: no record with runs to analyse")
    body = {k: v for k, v in doc.items() if k not in ("schema", "benchmark", "provenance")}
    # A record from before the key existed: the last night on file (read before it changes).
    last = doc.get("last_night_mde_pct") or last_night_mde(
        read_json(options.BENCH_DIR / "nightly.json")
    )
    body["last_night_mde_pct"] = last
    body |= analyse(doc["runs"], n_nights, seed, last)
    body["config"] = dict(body.get("config") or {}) | {"nights": n_nights, "seed": seed}
    return record.write(out, "bench-sensitivity", body, prov=doc["provenance"], repo=REPO)


def summary_text(doc: Mapping[str, Any]) -> str:
    """The drawn nights, the detectable changes and the targets as terminal tables."""
    fmt = noise.fmt
    night_rows = [
        [d["comparison"], str(d["pool_rounds"]), str(d["nights"]),
         fmt(d["flagged_share"], "{:.3f}"), fmt(d["confirmed_share"], "{:.3f}")]
        for d in doc["nights"]
    ]  # fmt: skip
    keys = ("before_pct", "before_last_night_median_pct", "after_pct", "after_paired_pct")
    det_rows = [[t["metric"], *(fmt(t[k], "{:.2f}") for k in keys)] for t in doc["detectable"]]
    size_rows = [
        [name, fmt(s["increase_pct"], "{:.2f}"),
         f"[{fmt(s['low_pct'], '{:.2f}')}, {fmt(s['high_pct'], '{:.2f}')}]"]
        for name, s in doc["planted_sizes"].items()
    ]  # fmt: skip
    return "\n\n".join(
        [
            record.text_table(
                ["comparison", "rounds", "nights", "flagged", "confirmed"], night_rows
            ),
            record.text_table(["planted", "measured %", "95 % interval"], size_rows),
            record.text_table(
                ["metric", "before %", "last night %", "after %", "after paired %"], det_rows
            ),
            "RTT noise parts: " + json.dumps(doc["rtt_noise_parts"]),
            targets_text(doc["targets"]),
            "\n".join(doc["shortfalls"]),
        ]
    )


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rounds", type=options.positive_int, default=ROUNDS,
                   help=f"rounds of every condition (default {ROUNDS}; a night and its re-run "
                   f"need {nights.NIGHT_ROUNDS + nights.CONFIRM_ROUNDS})")  # fmt: skip
    p.add_argument("--nights", type=options.positive_int, default=NIGHTS,
                   help=f"nights drawn per comparison (default {NIGHTS})")  # fmt: skip
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument(
        "--only",
        type=options.names,
        default=[],
        help="measure only these conditions again, into the record at --out (e.g. "
        "emu-0,emu-rtt5,emu-rtt10)",
    )
    p.add_argument(
        "--reanalyse",
        action="store_true",
        help="measure nothing: analyse the runs of the record at --out again (e.g. more nights)",
    )
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "sensitivity.json")
    p.add_argument("--raw-dir", type=Path, default=options.DATA / "bench-runs")


def main(args: argparse.Namespace) -> int:
    why = callgrind.unavailable()
    if why is not None:
        print(f"netstick bench sensitivity: callgrind cells cannot run: {why}", file=sys.stderr)
        return 2
    if args.reanalyse:
        doc = reanalyse(args.out, args.nights, args.seed)
    else:
        doc = run(args.out, args.raw_dir, rounds=args.rounds, n_nights=args.nights, seed=args.seed,
                  only=args.only)  # fmt: skip
    print(summary_text(doc))
    print(f"results in {args.out}")
    return 0 if all(t["pass"] for t in doc["targets"]) else 1
