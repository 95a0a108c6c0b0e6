"""bench-prototypes: every reference transport at 50 and 200 players, checked against targets.

Each (transport, players, repetition) is one cell run by the harness (workflow.harness.run), as a
campaign's run is: stream workload, 100 B at 60 Hz per player with the periodic app probes beside
it, a 12 s window after all players connected, network profile lan (the run's own namespaces
joined by a veth with root, plain loopback without), the server pinned to CPU 0 and the client
processes to CPU 1. Its numbers are the stats stage's per-run numbers (stats.runs_table, over
the window stats.window defines for every campaign's run, so no warm-up is cut here either);
only what concerns this benchmark alone is added here: the connect time of the clients'
CONNECTED lines and players per client core. A failed run is recorded with its reason and the
bench goes on.

The JSON file (written through workflow.cli.bench.record) holds one record per (transport,
players) with the median of its repetitions and every repetition, the provenance of the numbers,
and a `targets` section with each target's measured value and verdict.
"""

from __future__ import annotations

import shlex
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from prototypes.contract import lines
from prototypes.contract import manifest as manifests
from prototypes.contract.logs import read_events_csv
from stats import runs_table
from stats.window import Window
from workflow.campaign import layout
from workflow.cli.bench import record
from workflow.files import REPO, read_json
from workflow.harness import cell as cells
from workflow.harness import provenance
from workflow.harness.run import Outcome, run_cell

TRANSPORTS = ("tcp", "udp", "kcp", "enet", "quic", "ws", "webrtc")
BENCH_PLAYERS = (50, 200)
BENCH_DURATION_S = 12.0
STREAM_PARAMS = {"size": 100, "rate": 60}
PINNING = {"server": [0], "clients": [1]}
NETWORK_PROFILE = "lan"
REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
Progress = Callable[[str], None]


def print_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Target:
    """A threshold one metric must meet for some transports at one player count."""

    name: str
    metric: str
    op: str  # "<=" or ">="
    threshold: float
    transports: tuple[str, ...]
    players: int
    note: str = ""


TARGETS = (
    Target(
        "players_per_client_core",
        "players_per_client_core",
        ">=",
        500.0,
        ("tcp", "udp", "ws", "enet"),
        200,
        note="200 players cannot show 500 players on one core directly: the value is "
        "players / client_cpu_cores, which assumes client CPU grows linearly with players",
    ),
    Target("send_late_p99", "send_late_p99_us", "<=", 500.0, ("tcp", "udp", "ws", "enet"), 200),
    Target("udp_rtt_p50", "rtt_p50_us", "<=", 100.0, ("udp",), 50),
    Target("connect_time", "connect_s", "<=", 2.0, TRANSPORTS, 200),
)

# This benchmark's names for the stats stage's per-run numbers (the names its README table and
# its committed results have always used).
FROM_RUNS_TABLE = {
    "rtt_p50_us": "rtt_net_p50_us",
    "rtt_p95_us": "rtt_net_p95_us",
    "rtt_p99_us": "rtt_net_p99_us",
    "rtt_samples": "rtt_net_samples",
    "send_late_p99_us": "send_late_p99_us",
    "server_cpu_cores": "server_cpu_cores",
    "client_cpu_cores": "client_cpu_cores",
    "server_rss_bytes": "server_rss_bytes",
    "client_rss_bytes": "client_rss_bytes",
    "probe_loss_ratio": "probe_loss_ratio",
    "server_players_max": "players_connected_max",
    "isolation": "isolation",
    "overhead_s": "overhead_s",
}
# Summarised over repetitions by their median (single runs on two shared cores vary).
MEDIAN_METRICS = (
    "rtt_p50_us", "rtt_p95_us", "rtt_p99_us", "send_late_p99_us", "server_cpu_cores",
    "client_cpu_cores", "players_per_client_core", "server_rss_bytes", "client_rss_bytes",
    "connect_s", "probe_loss_ratio",
)  # fmt: skip


def out_path(man: manifests.Manifest, bench_dir: Path = REPO / "data" / "bench") -> Path:
    """Where a prototype's figures go: prototypes.json for the reference (the README's table),
    prototypes-<name>.json for another prototype, so measuring one never overwrites another's."""
    if man.path.resolve() == REFERENCE_MANIFEST.resolve():
        return bench_dir / "prototypes.json"
    return bench_dir / f"prototypes-{man.name}.json"


def bench_cell(
    transport: str,
    players: int,
    repetition: int,
    *,
    duration_s: float = BENCH_DURATION_S,
    pin: bool = True,
    prototype: Path = REFERENCE_MANIFEST,
    campaign: str = "bench-prototypes",
) -> dict[str, Any]:
    """The validated cell of one repetition (its seed is the repetition number)."""
    doc: dict[str, Any] = {
        "campaign": campaign,
        "cell_id": f"{transport}-p{players}",
        "prototype": str(prototype),
        "transport": transport,
        "players": players,
        "workload": "stream",
        "params": STREAM_PARAMS,
        "duration_s": duration_s,
        "network_profile": NETWORK_PROFILE,
        "placement": "local",  # pinning names this machine's CPUs
        "run_id": f"r{repetition}",
        "seed": repetition,
    }
    if pin:
        doc["cpu_pinning"] = PINNING
    return cells.validate(doc, f"{campaign} cell {transport}/{players}/r{repetition}")


def manifest_for(binary: Path | None, work_dir: Path, base: Path = REFERENCE_MANIFEST) -> Path:
    """The manifest whose cells run binary: base itself when binary is its executable (or
    None), else a copy of base in work_dir that names binary (the harness starts what the
    manifest names, so a binary built elsewhere needs its own manifest)."""
    man = manifests.load(base)
    if binary is None or binary.resolve() == man.executable:
        return base
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    doc["executable"] = str(binary.resolve())
    copy = work_dir / base.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    manifests.load(copy)  # a copy the harness would refuse fails here, before any run
    return copy


def measure(cell: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The stats stage's per-run numbers of one ok run (stats.runs_table, over the window every
    campaign's run is measured in), plus the net probes' loss ratio; read_error names the
    files that could not be read."""
    meta = read_json(run_dir / "meta.json")
    found = layout.RawRun(
        campaign=str(cell.get("campaign")),
        cell=cell,
        block=None,
        record={"status": "ok"},
        run_dir=run_dir,
        failed=(),
        meta=meta,
        host=layout.host_of(meta),
    )
    data = runs_table.read_run(found)
    row = runs_table.measure(data)
    if data.unread:
        row["read_error"] = "; ".join(f"{p}: {why}" for p, why in data.unread.items())
    events = [
        e for p in sorted(run_dir.glob("logs/client-*.events.csv")) for e in read_events_csv(p)
    ]
    row["probe_loss_ratio"] = runs_table.probe_loss_ratio(events)
    return row


def connect_s(run_dir: Path) -> float | None:
    """Seconds until every player of the run connected: the slowest client process's
    CONNECTED line (each process connects its own players at the same time)."""
    times = []
    for path in sorted(run_dir.glob("client-*.stdout.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(lines.CONNECTED_PREFIX):
                value = lines.fields(line).get("connect_s")
                if value is not None:
                    times.append(float(value))
    return max(times, default=None)


def run_record(cell: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """One repetition's record: the stats stage's numbers of the run, then how they were got."""
    rec: dict[str, Any] = {
        "prototype": manifests.load(cell["prototype"]).name,
        "transport": cell["transport"],
        "players": cell["players"],
        "run_id": cell["run_id"],
        "cell_id": cell["cell_id"],
        "ok": outcome.status == "ok",
        "error": None if outcome.status == "ok" else f"{outcome.reason}: {outcome.detail}",
    }
    run_dir = outcome.path
    meta = read_json(run_dir / "meta.json") or {}
    status = read_json(run_dir / "status.json") or {}
    if rec["ok"]:
        try:
            row = measure(cell, run_dir)
        except Exception as exc:  # an unreadable run is a failed record, not a lost bench
            row = {"read_error": f"{type(exc).__name__}: {exc}"}
        if row.get("read_error"):
            rec.update(ok=False, error=f"read_error: {row['read_error']}")
        rec.update({ours: row.get(theirs) for ours, theirs in FROM_RUNS_TABLE.items()})
        cores = rec["client_cpu_cores"]
        rec["players_per_client_core"] = (
            cell["players"] / cores if rec["ok"] and cores is not None and cores > 0 else None
        )
        rec["connect_s"] = connect_s(run_dir)
    window = Window.of(meta)
    commands = meta.get("commands") or {}
    rec.update(
        players_connected=(status.get("counts") or {}).get("players_connected"),
        exit_codes=status.get("exit_codes"),
        window_start_unix_ns=window.start_unix_ns,
        window_end_unix_ns=window.end_unix_ns,
        window_s=window.length_s,
        pinned_cpus=meta.get("cpu_pinning"),
        sampler_cpu_s=(meta.get("monitor") or {}).get("sampler_cpu_s"),
        commands={
            "server": shlex.join(commands.get("server") or []),
            "clients": [shlex.join(argv) for argv in commands.get("clients") or []],
        },
        run_dir=str(run_dir),
    )
    return rec


def run_one(cell: dict[str, Any], out: Path) -> dict[str, Any]:
    """Run one cell with the harness and return its record; never raises for a failed run."""
    try:
        outcome = run_cell(cell, out)
    except Exception as exc:  # a harness bug in one run must not lose the others
        detail = "".join(traceback.format_exception(exc)).rstrip()
        outcome = Outcome("failed", "internal_error", detail, out)
    return run_record(cell, outcome)


def combine_repetitions(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """One record per cell: the median of each metric over the ok runs, every run kept."""
    ok = [r for r in reps if r["ok"]]
    out = dict(ok[0] if ok else reps[0])
    out["ok"] = len(ok) == len(reps)
    if not out["ok"]:
        out["error"] = next(r["error"] for r in reps if not r["ok"])
    for key in MEDIAN_METRICS:
        values = [r[key] for r in ok if r.get(key) is not None]
        out[key] = statistics.median(values) if values else None
        out[f"{key}_runs"] = [r.get(key) for r in reps]
    out["summary"] = f"median of {len(ok)} ok runs of {len(reps)}"
    out["repetitions"] = reps
    return out


def evaluate_targets(
    records: Sequence[dict[str, Any]], targets: Sequence[Target] = TARGETS
) -> list[dict[str, Any]]:
    """Each target for each of its transports that was run: measured value and verdict.

    A cell that failed or lacks the metric fails its targets (pass=false, measured=null).
    """
    by_cell = {(r["transport"], r["players"]): r for r in records}
    out = []
    for target in targets:
        for transport in target.transports:
            rec = by_cell.get((transport, target.players))
            if rec is None:
                continue  # not part of this bench's matrix
            value = rec.get(target.metric)
            entry: dict[str, Any] = {
                "target": target.name,
                "transport": transport,
                "players": target.players,
                "metric": target.metric,
                "op": target.op,
                "threshold": target.threshold,
                "measured": value,
                "pass": value is not None
                and rec.get("ok", False)
                and record.passes(target.op, target.threshold, value),
            }
            if not rec.get("ok", False):
                first_line = (rec.get("error") or "unknown error").splitlines()[0]
                entry["note"] = f"cell failed: {first_line}"
            elif value is None:
                entry["note"] = "metric not measured"
            elif target.note:
                entry["note"] = target.note
            out.append(entry)
    return out


def run(
    out: Path,
    raw_dir: Path,
    *,
    transports: Sequence[str] = TRANSPORTS,
    players: Sequence[int] = BENCH_PLAYERS,
    duration_s: float = BENCH_DURATION_S,
    repetitions: int = 3,
    pin: bool = True,
    binary: Path | None = None,
    prototype: Path = REFERENCE_MANIFEST,
    progress: Progress = print_progress,
) -> dict[str, Any]:
    """Run the matrix through the harness, write the JSON document to out, and return it.

    binary: the prototype executable (default: the one prototype's manifest names);
    prototype: the manifest whose transports are run.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = raw_dir / stamp
    manifest = manifest_for(binary, work, prototype)
    prov = provenance.collect(REPO, manifests.load(manifest).executable)
    config = {
        "transports": list(transports),
        "players": list(players),
        "repetitions": repetitions,
        "workload": "stream",
        "params": STREAM_PARAMS,
        "duration_s": duration_s,
        "network_profile": NETWORK_PROFILE,
        "measurement_window": "the harness's window in meta.json, from the last CONNECTED line "
        "to the clients' exit, read by stats.window as for every campaign's run",
        "pinning": PINNING if pin else None,
        "percentile_method": "numpy linear (Hyndman-Fan type 7)",
        "prototype": str(manifest),
        "prototype_name": manifests.load(manifest).name,
    }
    records: list[dict[str, Any]] = []
    matrix = [(t, n) for t in transports for n in players]
    doc: dict[str, Any] = {}
    for i, (transport, n) in enumerate(matrix, start=1):
        reps = []
        for r in range(1, repetitions + 1):
            cell = bench_cell(transport, n, r, duration_s=duration_s, pin=pin, prototype=manifest)
            progress(f"[{i}/{len(matrix)}] {transport} {n} players, run {r}/{repetitions} ...")
            reps.append(run_one(cell, work / f"{transport}-{n}" / cell["run_id"]))
        rec = combine_repetitions(reps)
        records.append(rec)
        state = "ok" if rec["ok"] else f"FAILED: {(rec['error'] or '').splitlines()[0]}"
        progress(f"[{i}/{len(matrix)}] {transport} {n} players: {state}")
        body = {
            "config": config,
            "records": records,
            "targets": evaluate_targets(records),
            "targets_note": TARGETS[0].note,
        }
        # After every cell: an interrupted bench keeps what it measured.
        doc = record.write(out, "bench-prototypes", body, prov=prov)
    return doc


def target_summary(doc: dict[str, Any]) -> str:
    """A few lines for the terminal: each target's verdict."""
    return record.targets_text(doc["targets"])
