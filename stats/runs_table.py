"""One row per planned run of a campaign: what was measured, and what failed or never ran.

rows() walks data/raw/<campaign> (workflow.layout.walk) and, for each ok run, reads its logs
once (row_of, one run: read_run reads the rtt.csv files, the monitor CSVs, meta.json) and
measures them over the measurement window (stats.window); read_run_dir reads a run directory
on its own (a bench's run, outside any campaign) the same way. stats.ingest writes the rows as
runs.parquet and runs.csv (columns: stats.tables.RUNS) and takes the samples from the same
reading. Every planned run gets a row, so a failed or missing run can never silently drop out
of a table (status says which it is). A file of an ok run that cannot be read gives the row a
read_error naming it, not a crash.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitors import callgrind, perfcount
from monitors.sampler import MONITOR_CSV, Sample, read_monitor
from prototypes.contract import manifest as manifests
from prototypes.contract import workloads
from prototypes.contract.logs import (
    LogFormatError,
    RttColumns,
    parse_detail,
    read_rtt_logs,
    read_ticks_csv,
)
from stats import interference, per_message, stalls
from stats.resources import mean_cpu_cores, peak_rss_bytes
from stats.summary import summarize_by_kind
from stats.window import Window
from workflow import layout
from workflow.files import REPO, read_json


@dataclass(frozen=True, slots=True)
class RunData:
    """What is read of one ok run, once: its meta.json and window, its RTT samples (empty when
    an rtt.csv could not be read), its sampler rows and server ticks (None where the file is
    absent or could not be read) and the files that could not be read, with why."""

    run_dir: Path
    meta: dict[str, Any]
    window: Window
    rtt: RttColumns
    monitor: list[Sample] | None
    players_connected: list[int] | None = None  # server.ticks.csv, one value per tick
    tick_messages: list[per_message.TickMessages] | None = None  # server.ticks.csv, per tick
    tick_ns: list[int] | None = None  # server.ticks.csv: when each tick's work ended
    server_instructions: int | None = None  # callgrind's or perf's count (server_profiler)
    unread: dict[str, str] = field(default_factory=dict)


def read_run_dir(run_dir: Path) -> RunData:
    """Read one ok run directory's logs and its meta.json (a run measured outside a campaign,
    or by itself); a file that cannot be read is listed in unread, never raised."""
    return _read(run_dir, read_json(run_dir / "meta.json"))


def read_run(run: layout.RawRun) -> RunData:
    """read_run_dir of a run the walker found, with the meta.json the walker read."""
    return _read(run.run_dir, run.meta)


def _read(run_dir: Path, meta: dict[str, Any] | None) -> RunData:
    unread: dict[str, str] = {}
    if meta is None:
        unread[str(run_dir / "meta.json")] = "missing or not a JSON object"
    try:
        rtt = read_rtt_logs(run_dir / "logs")
    except LogFormatError as exc:
        unread[str(exc.path)] = exc.reason
        rtt = RttColumns.concat([])
    except OSError as exc:
        unread[str(run_dir / "logs")] = f"{type(exc).__name__}: {exc}"
        rtt = RttColumns.concat([])
    monitor = None
    if (run_dir / MONITOR_CSV).is_file():
        try:
            monitor = read_monitor(run_dir)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            unread[str(run_dir / MONITOR_CSV)] = f"{type(exc).__name__}: {exc}"
    ticks = run_dir / "logs" / "server.ticks.csv"
    players = messages = tick_ns = None
    if ticks.is_file():
        try:
            tick_rows = read_ticks_csv(ticks)
            players = [int(r["players_connected"]) for r in tick_rows]
            tick_ns = [int(r["t_unix_ns"]) for r in tick_rows]
            messages = per_message.tick_messages(tick_rows)
        except (OSError, ValueError) as exc:
            unread[str(ticks)] = f"{type(exc).__name__}: {exc}"
    meta = meta or {}
    instructions = None
    tool = (meta.get("server_profiler") or {}).get("tool")
    if tool == "callgrind":
        try:
            instructions = callgrind.read_instructions(run_dir)
        except (OSError, ValueError) as exc:
            unread[str(run_dir / callgrind.OUT_FILE)] = f"{type(exc).__name__}: {exc}"
    elif tool == "perf":  # the CPU's instruction counter (monitors/perfcount.py)
        try:
            instructions = perfcount.read_count(run_dir)
        except (OSError, ValueError) as exc:
            unread[str(run_dir / perfcount.OUT_FILE)] = f"{type(exc).__name__}: {exc}"
    return RunData(
        run_dir,
        meta,
        Window.of(meta),
        rtt,
        monitor,
        players_connected=players,
        tick_messages=messages,
        tick_ns=tick_ns,
        server_instructions=instructions,
        unread=unread,
    )


def connect_s(meta: Mapping[str, Any]) -> float | None:
    """Seconds until every player of the run connected: the slowest client process's
    connect_s in meta.json (each process connects its own players at the same time)."""
    times = [s for s in (meta.get("connect_s") or {}).values() if isinstance(s, int | float)]
    return round(max(times), 3) if times else None


def measure(data: RunData) -> dict[str, Any]:
    """The per-run numbers of one ok run, over its measurement window."""
    meta, window, rtt = data.meta, data.window, data.rtt
    row: dict[str, Any] = {"overhead_s": meta.get("overhead_s"), "connect_s": connect_s(meta)}
    row["slurm_job_id"] = (meta.get("job") or {}).get("slurm_job_id")
    row["bad_rows"] = sum(rtt.bad_rows.values())
    kinds = summarize_by_kind(
        rtt.t_unix_ns,
        rtt.kind,
        rtt.rtt_us,
        rtt.send_late_us,
        window.start_unix_ns,
        window.end_unix_ns,
    )
    for kind, s in kinds.items():
        row[f"rtt_{kind}_p50_us"] = round(s.rtt_us.p50, 1)
        row[f"rtt_{kind}_p95_us"] = round(s.rtt_us.p95, 1)
        row[f"rtt_{kind}_p99_us"] = round(s.rtt_us.p99, 1)
        if kind == "net":
            row["rtt_net_samples"] = s.rtt_us.n
            if s.send_late_us is not None:
                row["send_late_p99_us"] = round(s.send_late_us.p99, 1)
    if data.monitor is not None:
        ws, we = window.start_unix_ns, window.end_unix_ns
        clients = sorted({s.proc for s in data.monitor if s.proc.startswith("client")})
        server = mean_cpu_cores(data.monitor, "server", ws, we)
        row["server_cpu_cores"] = None if server is None else round(server, 4)
        cores = [mean_cpu_cores(data.monitor, c, ws, we) for c in clients]
        row["client_cpu_cores"] = round(sum(c for c in cores if c is not None), 4)
        row["server_rss_bytes"] = peak_rss_bytes(data.monitor, "server")
        # Each client process's own peak, added: the memory all the players took.
        peaks = [p for p in (peak_rss_bytes(data.monitor, c) for c in clients) if p is not None]
        row["client_rss_bytes"] = sum(peaks) if peaks else None
        row.update(interference.measure(data.monitor, window, meta).columns())
    # Exact server traffic exists only with namespaces (its veth); without isolation the
    # NIC totals mix every process of the host and are left to the stats stage.
    row["isolation"] = meta.get("isolation")
    totals = (meta.get("net_totals") or {}).get("server")
    window_s = window.length_s
    if totals and window_s:
        # Whole-run counters over the window's length: the run's traffic outside the window
        # (joins, leaves) is small next to it and is what the papers' totals include too.
        row["server_rx_bytes_per_s"] = round(totals.get("rx_bytes", 0) / window_s, 1)
        row["server_tx_bytes_per_s"] = round(totals.get("tx_bytes", 0) / window_s, 1)
        # Datagrams (or segments) each way: what an acknowledgement scheme changes.
        row["server_rx_packets_per_s"] = round(totals.get("rx_packets", 0) / window_s, 1)
        row["server_tx_packets_per_s"] = round(totals.get("tx_packets", 0) / window_s, 1)
    if data.players_connected is not None:
        row["players_connected_max"] = max(data.players_connected, default=None)
    row.update(_per_message(data))
    source = workloads.rtt_source(meta["cell"]) if isinstance(meta.get("cell"), Mapping) else None
    net = rtt.t_unix_ns[rtt.kind == "net"]
    row.update(stalls.measure(data.tick_ns, net, window, source))
    return row


def _per_message(data: RunData) -> dict[str, Any]:
    """The server's CPU µs and, under callgrind, instructions per application message
    (stats.per_message), and the profiler the server ran under."""
    profiler = data.meta.get("server_profiler") or {}
    row: dict[str, Any] = {"server_profiler": profiler.get("tool")}
    if data.tick_messages is None:
        return row
    if data.monitor is not None:
        cpu = per_message.cpu_us_per_msg(data.monitor, data.tick_messages, data.window)
        row["server_cpu_us_per_msg"] = None if cpu is None else round(cpu, 3)
    if data.server_instructions is not None:
        instr = per_message.instr_per_msg(data.server_instructions, data.tick_messages, profiler)
        row["server_instr_per_msg"] = None if instr is None else round(instr, 1)
    return row


def probe_loss_ratio(events: list[dict[str, str]], kind: str = "net") -> float | None:
    """Lost / sent over all players' `probes` events (CONTRACT.md section 3.3) of one kind;
    None without such events.

    Probes still in flight at exit are neither lost nor echoed; they stay in the denominator,
    which is what a player sent.
    """
    sent = lost = 0
    seen = False
    for row in events:
        if row["event"] != "probes":
            continue
        detail = parse_detail(row["detail"])
        if detail.get("kind") != kind:
            continue
        seen = True
        sent += int(float(row["value"] or 0))
        lost += int(detail.get("lost", "0") or 0)
    if not seen:
        return None
    return lost / sent if sent > 0 else 0.0


@functools.cache
def _declared(prototype: str, transport: str) -> tuple[str | None, str | None, bool | None]:
    """(library, pinned version, reliable_ordered) of a transport, from the prototype's manifest
    (a path as the plan names it); Nones when the manifest is gone or does not know the
    transport: the nightly history files versions under the library, so a version is never just
    "pinned", and comparisons of reliable streams say where only one side keeps order."""
    try:
        path = Path(prototype)
        man = manifests.load_once((path if path.is_absolute() else REPO / path).resolve())
        t = man.transport(transport)
    except (manifests.ManifestError, KeyError, ValueError):
        return None, None, None
    return t.library, t.version, t.reliable_ordered


DEFAULT_TICK_RATE_HZ = 60  # the contract's -tick-rate default


def _profile_rtt_us(meta: Mapping[str, Any] | None) -> float | None:
    """The round trip the run's network profile adds before jitter and queueing (its two
    one-way delays, as the harness recorded the profile in meta.json), µs; None unrecorded."""
    spec = ((meta or {}).get("network_profile") or {}).get("spec")
    if not isinstance(spec, Mapping):
        return None
    return 1000.0 * sum(float((spec.get(d) or {}).get("delay_ms", 0)) for d in ("up", "down"))


def plan_row(run: layout.RawRun) -> dict[str, Any]:
    """The columns every planned run has, from its plan entry, record and failed attempts."""
    cell = run.cell
    profile = cell["network_profile"]
    library, pinned, ordered = _declared(str(cell["prototype"]), str(cell["transport"]))
    version = cell.get("library_version", "pinned")
    row: dict[str, Any] = {
        "campaign": run.campaign,
        "cell_id": run.cell_id,
        "run_id": run.run_id,
        "block": run.block,
        "run_order": cell.get("run_order"),
        "seed": cell.get("seed"),
        "prototype": Path(cell["prototype"]).parent.name,
        "library_version": version,
        "library": library,
        "library_release": pinned if version == "pinned" else version,
        "transport": layout.transport_label(cell),
        "variant": cell.get("variant"),
        "reliable_ordered": ordered,
        "transport_options": json.dumps(cell.get("transport_options", {}), sort_keys=True),
        "players": cell["players"],
        "workload": cell["workload"],
        "params": json.dumps(cell.get("params", {}), sort_keys=True),
        "network_profile": profile
        if isinstance(profile, str)
        else json.dumps(profile, sort_keys=True),
        "duration_s": cell["duration_s"],
        "tick_rate_hz": cell.get("tick_rate_hz", DEFAULT_TICK_RATE_HZ),
        "profile_rtt_us": _profile_rtt_us(run.meta),
        "rtt_source": workloads.rtt_source(cell),
        "status": run.status,
        "failed_attempts": len(run.failed),
        "host": run.host,
        "commit": (((run.meta or {}).get("versions") or {}).get("git") or {}).get("commit"),
    }
    if run.record is not None:
        row["reason"] = run.record.get("reason")
        row["attempts"] = len(run.failed) + (1 if run.status == "ok" else 0)
    failure = run.failure
    if failure is not None:  # failed, or not run (yet) after failed attempts: the last one's
        row["reason"] = failure.reason
        row["attempts"] = failure.attempts
        row["failed_process"] = failure.process
        row["exit_code"] = failure.exit_code
        row["stderr_tail"] = json.dumps(list(failure.stderr))
        row["failure_summary"] = failure.summary
    return row


def rows(raw_campaign: Path) -> Iterator[tuple[dict[str, Any], RunData | None]]:
    """(row, what was read) of every planned run in plan order (row_of each run the walker
    finds)."""
    for run in layout.walk(raw_campaign):
        yield row_of(run)


def row_of(run: layout.RawRun) -> tuple[dict[str, Any], RunData | None]:
    """(row, what was read) of one planned run; what was read is None unless the run is ok.
    Measuring never raises for one run's data: unreadable files are named in the row's
    read_error (and in RunData.unread). It depends on nothing but run, so stats.ingest reads
    runs side by side."""
    row = plan_row(run)
    if run.status != "ok":
        return row, None
    data = read_run(run)
    row.update(measure(data))
    if data.unread:
        row["read_error"] = "; ".join(f"{p}: {why}" for p, why in data.unread.items())
    return row, data
