"""One row per planned run of a campaign: what was measured, and what failed or never ran.

Reads data/raw/<campaign>/plan.json, each run's record and, for ok runs, its logs, monitor CSV
and meta.json (stats.ingest writes the rows as runs.parquet and runs.csv). Every planned run
gets a row, so a failed or missing run can never silently drop out of a table (status says
which it is).
A run directory that cannot be read gives a row with status ok and a read_error, not a crash.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from monitors.sampler import Sample
from prototypes.contract.logs import read_rtt_logs, read_ticks_csv
from stats.resources import mean_cpu_cores, peak_rss_bytes
from stats.summary import summarize_by_kind
from workflow.campaign.records import read_json


def _samples(path: Path) -> list[Sample]:
    with path.open(newline="") as f:
        return [
            Sample(
                int(r["t_unix_ns"]),
                r["proc"],
                float(r["cpu_user_s"]),
                float(r["cpu_system_s"]),
                float(r["cpu_cores"]),
                int(r["rss_bytes"]),
                int(r["num_threads"]) if r["num_threads"] else None,
            )
            for r in csv.DictReader(f)
        ]


def read_monitor(run: Path) -> list[Sample]:
    """The run's sampler rows: monitor.csv, where under SLURM each process sampled on its own
    node (monitor-<name>.csv) replaces that process's rows (the local monitor.csv then sees
    only the srun launcher)."""
    samples = _samples(run / "monitor.csv")
    for node_csv in sorted(run.glob("monitor-*.csv")):
        name = node_csv.stem.removeprefix("monitor-")
        samples = [x for x in samples if x.proc != name] + _samples(node_csv)
    return samples


def measure(run: Path) -> dict[str, Any]:
    """The per-run numbers of one ok run directory, over its measurement window."""
    meta = read_json(run / "meta.json") or {}
    ws, we = meta.get("window_start_unix_ns"), meta.get("window_end_unix_ns")
    row: dict[str, Any] = {"overhead_s": meta.get("overhead_s")}
    job = meta.get("job") or {}
    row["host"] = job.get("host") or (meta.get("versions") or {}).get("host", {}).get("name")
    row["slurm_job_id"] = job.get("slurm_job_id")
    rtt = read_rtt_logs(run / "logs")
    kinds = summarize_by_kind(rtt.t_unix_ns, rtt.kind, rtt.rtt_us, rtt.send_late_us, ws, we)
    for kind, s in kinds.items():
        row[f"rtt_{kind}_p50_us"] = round(s.rtt_us.p50, 1)
        row[f"rtt_{kind}_p95_us"] = round(s.rtt_us.p95, 1)
        row[f"rtt_{kind}_p99_us"] = round(s.rtt_us.p99, 1)
        if kind == "net":
            row["rtt_net_samples"] = s.rtt_us.n
            if s.send_late_us is not None:
                row["send_late_p99_us"] = round(s.send_late_us.p99, 1)
    if (run / "monitor.csv").is_file():
        samples = read_monitor(run)
        clients = sorted({s.proc for s in samples if s.proc.startswith("client")})
        server = mean_cpu_cores(samples, "server", ws, we)
        row["server_cpu_cores"] = None if server is None else round(server, 4)
        cores = [mean_cpu_cores(samples, c, ws, we) for c in clients]
        row["client_cpu_cores"] = round(sum(c for c in cores if c is not None), 4)
        row["server_rss_bytes"] = peak_rss_bytes(samples, "server")
    # Exact server traffic exists only with namespaces (its veth); without isolation the
    # NIC totals mix every process of the host and are left to the stats stage.
    row["isolation"] = meta.get("isolation")
    totals = (meta.get("net_totals") or {}).get("server")
    window_s = (we - ws) / 1e9 if ws and we else None
    if totals and window_s:
        # Whole-run counters over the window's length: the run's traffic outside the window
        # (joins, leaves) is small next to it and is what the papers' totals include too.
        row["server_rx_bytes_per_s"] = round(totals.get("rx_bytes", 0) / window_s, 1)
        row["server_tx_bytes_per_s"] = round(totals.get("tx_bytes", 0) / window_s, 1)
    ticks = run / "logs" / "server.ticks.csv"
    if ticks.is_file():
        counts = [int(r["players_connected"]) for r in read_ticks_csv(ticks)]
        row["players_connected_max"] = max(counts, default=None)
    return row


def rows(raw_campaign: Path) -> list[dict[str, Any]]:
    plan = read_json(raw_campaign / "plan.json")
    if plan is None:
        raise SystemExit(f"{raw_campaign / 'plan.json'}: missing or not JSON; run the campaign")
    out = []
    for entry in plan["runs"]:
        cell = entry["cell"]
        row: dict[str, Any] = {
            "campaign": plan["campaign"],
            "cell_id": cell["cell_id"],
            "run_id": cell["run_id"],
            "block": entry.get("block"),
            "run_order": cell.get("run_order"),
            "seed": cell.get("seed"),
            "prototype": Path(cell["prototype"]).parent.name,
            "library_version": cell.get("library_version", "pinned"),
            "transport": cell["transport"],
            "transport_options": json.dumps(cell.get("transport_options", {}), sort_keys=True),
            "players": cell["players"],
            "workload": cell["workload"],
            "params": json.dumps(cell.get("params", {}), sort_keys=True),
            "network_profile": cell["network_profile"]
            if isinstance(cell["network_profile"], str)
            else json.dumps(cell["network_profile"], sort_keys=True),
            "duration_s": cell["duration_s"],
        }
        cell_dir = raw_campaign / cell["cell_id"]
        record = read_json(cell_dir / f"{cell['run_id']}.json")
        failed = cell_dir / f"{cell['run_id']}.failed"
        row["failed_attempts"] = len(list(failed.iterdir())) if failed.is_dir() else 0
        if record is None:
            row["status"] = "not_run"
        else:
            row["status"] = record["status"]
            row["reason"] = record.get("reason")
        if row["status"] == "ok":
            try:
                row.update(measure(cell_dir / cell["run_id"]))
            except Exception as exc:  # one unreadable run is a row with its error, not a crash
                row["read_error"] = f"{type(exc).__name__}: {exc}"
        out.append(row)
    return out
