"""Cells through the harness, as the benches run them: one cell of the stream workload run by
workflow.harness.run (as a campaign's run is) and measured with the stats stage's per-run
numbers (stats.runs_table, over the window stats.window defines for every campaign's run, so
no warm-up is cut here either).

bench-prototypes and `netstick demo` run their cells here. Only what concerns the benches alone
is added to the stats stage's numbers: the clients' connect time (meta.json's connect_s, which
the harness took from their CONNECTED lines), players per client core and the net probes' loss
ratio. A failed run is a record with its reason, never an exception: a bench goes on.
"""

from __future__ import annotations

import shlex
import statistics
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.logs import read_events_csv
from stats import runs_table
from stats.window import Window
from workflow.files import REPO, read_json
from workflow.harness import cell as cells
from workflow.harness.run import Outcome, run_cell

REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
TRANSPORTS = ("tcp", "udp", "kcp", "enet", "quic", "ws", "webrtc")  # the reference's
STREAM_PARAMS = {"size": 100, "rate": 60}
PINNING = {"server": [0], "clients": [1]}
NETWORK_PROFILE = "lan"
DURATION_S = 12.0
Progress = Callable[[str], None]

# The benches' names for the stats stage's per-run numbers (the names their README table and
# committed results have always used).
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
    "connect_s": "connect_s",
}
# Summarised over repetitions by their median (single runs on two shared cores vary).
MEDIAN_METRICS = (
    "rtt_p50_us", "rtt_p95_us", "rtt_p99_us", "send_late_p99_us", "server_cpu_cores",
    "client_cpu_cores", "players_per_client_core", "server_rss_bytes", "client_rss_bytes",
    "connect_s", "probe_loss_ratio",
)  # fmt: skip


def print_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def check_transports(names: list[str], prototype: Path = REFERENCE_MANIFEST) -> str | None:
    """Why names are not transports of the prototype's manifest, or None when they all are."""
    known = manifests.load(prototype).transport_names
    unknown = [t for t in names if t not in known]
    if unknown:
        return (
            f"--transports: unknown transport(s) {', '.join(unknown)}; expected a "
            f"comma-separated list from {','.join(known)}"
        )
    return None


def bench_cell(
    transport: str,
    players: int,
    repetition: int,
    *,
    duration_s: float = DURATION_S,
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


def measure(data: runs_table.RunData) -> dict[str, Any]:
    """The stats stage's per-run numbers of one ok run (read by runs_table.read_run_dir), plus
    the net probes' loss ratio; read_error names the files that could not be read."""
    row = runs_table.measure(data)
    if data.unread:
        row["read_error"] = "; ".join(f"{p}: {why}" for p, why in data.unread.items())
    logs = sorted(data.run_dir.glob("logs/client-*.events.csv"))
    row["probe_loss_ratio"] = runs_table.probe_loss_ratio(
        [e for p in logs for e in read_events_csv(p)]
    )
    return row


def _read_ok(run_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """An ok run's meta.json and numbers, each file read once; (None, its read_error) when the
    run could not be read."""
    try:
        data = runs_table.read_run_dir(run_dir)
        return data.meta, measure(data)
    except Exception as exc:  # an unreadable run is a failed record, not a lost bench
        return None, {"read_error": f"{type(exc).__name__}: {exc}"}


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
    meta, row = _read_ok(run_dir) if rec["ok"] else (None, {})
    if meta is None:
        meta = read_json(run_dir / "meta.json") or {}
    status = read_json(run_dir / "status.json") or {}
    if rec["ok"]:
        if row.get("read_error"):
            rec.update(ok=False, error=f"read_error: {row['read_error']}")
        rec.update({ours: row.get(theirs) for ours, theirs in FROM_RUNS_TABLE.items()})
        cores = rec["client_cpu_cores"]
        rec["players_per_client_core"] = (
            cell["players"] / cores if rec["ok"] and cores is not None and cores > 0 else None
        )
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
    return run_record(cell, harness_outcome(cell, out))


def harness_outcome(cell: dict[str, Any], out: Path) -> Outcome:
    """One run of cell through the harness: its outcome, a harness bug as a failed run; an
    interrupted run stops the bench (SystemExit 128 + signal)."""
    try:
        outcome = run_cell(cell, out)
    except Exception as exc:  # a harness bug in one run must not lose the others
        detail = "".join(traceback.format_exception(exc)).rstrip()
        outcome = Outcome("failed", "internal_error", detail, out)
    if outcome.interrupted_by is not None:
        # The harness stopped the run cleanly on SIGINT or SIGTERM: so does the bench (what it
        # measured so far is already written, after every cell), instead of starting the next.
        raise SystemExit(128 + outcome.interrupted_by)
    return outcome


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
