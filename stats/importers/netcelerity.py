"""Net-Celerity's committed results -> Netstick's samples, runs and resources tables.

Input layout (Net-Celerity's repository at the commit that still had data; see the data's
SOURCE.md):

- ``workload<W>_results/<PROTO>_results.csv``: ``Player_ID,Total_Players,RoundTripDelay_ms``,
  one row per line of a player's log (every 0.5 s), collected by mirror_collect_script.py.
- ``system_logs_workload<W>/<PROTO>/system_log_<N>p_<D>s.csv``: psutil samples of the server
  process and of the host, ``;``-separated, about one per second (system_monitor.py).

What the columns mean, and why they are mapped as they are, is in the comments below; the
Net-Celerity facts cited as "anchors 1.x" are from the project's notes on prior benchmarks
(anchors-seeds.md, section 1), which read Net-Celerity's scripts and computed its numbers.

Mapping:
- One run per (prototype, workload, player count), run_id "r1": every configuration ran once
  (anchors 1.7: "each player count has exactly N distinct Player_IDs").
- RTT samples: kind "lib" (Mirror's own NetworkTime.rtt estimate), rtt_us = ms * 1000.
  The results have no timestamps (the per-player logs with them were deleted, anchors 1.3
  step 7), so t_unix_ns is null and t_s is reconstructed: rows are 0.5 s apart and every player
  logged until the clients were killed together at the end, so the k-th row from a player's
  end is k * 0.5 s before the end. t_s = 0 is the start of the last duration_s (120 s) before
  the kill: the window Net-Celerity's own `tail(duration)` rule keeps (anchors 1.7).
- Runs' RTT percentiles are over the window 0 <= t_s < duration_s, as for Netstick's runs.
  Net-Celerity's own figures pool all rows, ramp-up included (anchors 1.8, 1.9); the samples
  table keeps every row so both can be computed.
- System logs: server_cpu_cores from the cumulative proc.cpu_times (user + system) over the
  window, which is exact for whatever the samples cover (as stats/resources.py does);
  proc.cpu_percent / 100 (psutil: 100 = one core) is kept per sample as a cross-check.
  server_rss_bytes = peak proc.memory_info.rss over the whole log (Netstick's definition).
  Network: net.bytes_{recv,sent}.<nic> are host-wide cumulative counters per NIC; the runs
  table gets the busiest non-loopback NIC's rate over the window (it names the NIC in flaws).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from stats.importers import (
    RESOURCES_SCHEMA,
    BadRows,
    ImportResult,
    cell_id,
    concat,
    counter_rates,
    join_flaws,
    parse_float,
    resource_frame,
    rtt_metrics,
)
from stats.tables import RUNS_SCHEMA, SAMPLES_SCHEMA, rows_frame

SOURCE = "net-celerity"
CAMPAIGN = "net-celerity"
RUN_ID = "r1"
DEFAULT_DURATION_S = 120.0  # config.cfg benchmark_duration="120" (anchors 1.2)
LOG_INTERVAL_S = 0.5  # PlayerLogging.cs: InvokeRepeating(..., 0f, 0.5f) (anchors 1.5)
RESULTS_HEADER = ["Player_ID", "Total_Players", "RoundTripDelay_ms"]


@dataclass(frozen=True)
class Prototype:
    prototype: str
    transport: str
    library_version: str
    transport_options: dict[str, str]
    flaws: tuple[str, ...]


# The three prototypes of Net-Celerity (anchors 1.4, 1.6): M-KCP and M-TP are one Mirror 86.13.4
# build whose transport was switched in the Unity editor; DOTS-NFE is Opencraft 2 on Netcode for
# Entities 1.0.17 over Unity Transport 2.0.1. Transport options are the scene/prefab settings.
_MIRROR_FLAWS = (
    # anchors 1.6 and 1.8 [computed]: NetworkTime.rtt is an EMA of pings stamped with frame time,
    # and Mirror sets targetFrameRate = sendRate = 60 headless, so the RTT is quantised to
    # 60 FPS frames: never below 16.67 ms, 16.67 and 33.33 the most common values.
    "RTT is Mirror NetworkTime.rtt (EMA of frame-time-stamped pings): quantised to 60 FPS "
    "frames with a 16.67 ms floor, not network RTT on a LAN",
    # anchors 1.8: Mirror rows include the ramp-up, NFE rows start once all players joined.
    "asymmetric warm-up: Mirror RTT rows include the ramp-up, NFE rows only after all joined",
    # anchors 1.4 / 1.8: transport chosen by an editor edit, no build scripts or binaries.
    "transport chosen by editing the Unity scene, no build scripts",
)
PROTOTYPES: dict[str, Prototype] = {
    "M-KCP": Prototype(
        "mirror",
        "kcp",
        "86.13.4",
        {"port": "7777", "NoDelay": "1", "Interval": "10", "Timeout": "10000"},
        _MIRROR_FLAWS,
    ),
    "M-TP": Prototype(
        "mirror",
        "telepathy",
        "86.13.4",
        {
            "NoDelay": "1",
            "SendTimeout": "5000",
            "ReceiveTimeout": "30000",
            "serverMaxMessageSize": "16384",
        },
        _MIRROR_FLAWS,
    ),
    "DOTS-NFE": Prototype(
        "nfe",
        "utp",
        "com.unity.netcode 1.0.17",
        {},
        (
            # anchors 1.5 / 1.6: NetworkMetrics.Rtt (EstimatedRTT EMA) as the "NFE RTT" profiler
            # counter, integer ms, one row per frame, kept only after all players joined.
            "RTT is NFE NetworkMetrics.Rtt (EMA of EstimatedRTT): integer ms, one row per "
            "frame, rows only after all players joined and Frame Number > 1",
            # anchors 1.5: stats are written only on exit and need a Development Build.
            "NFE stats buffered in memory and written on exit, Development Build only",
        ),
    ),
}

# anchors 1.8 [inferred] and SOURCE.md: workload1 = idle players, workload2 = players replaying
# recorded input traces (jump and place a block, 10 blocks). The trace's rate is unknown, so W2
# is not Netstick's `active` workload with its default interval; only `blocks` is known.
WORKLOADS: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {
    "workload1": ("idle", {}, ()),
    "workload2": (
        "active",
        {"blocks": "10"},
        (
            "workload2 replays recorded Unity input traces (jump and place 10 blocks, rate "
            "unknown): not Netstick's active workload, and the idle/active reading is inferred",
        ),
    ),
}

# Flaws of every Net-Celerity run.
FLAWS: tuple[str, ...] = (
    # anchors 1.7: no repetitions, confidence intervals or significance tests.
    "single run per configuration (no repetitions)",
    # anchors 1.8: "There is no network emulation at all."
    "no network emulation (DAS LAN)",
    # anchors 1.7: plots keep df.tail(duration_seconds) rows: 120 monitor rows span about 127 s
    # at the measured 1.056 s interval (anchors 1.5), and cpu_usage_per_player uses all rows.
    "fixed warm-up rule: their plots keep the last 120 monitor rows (about 127 s at the 1.056 s "
    "sampling interval) and their CPU-per-player plot keeps all rows, ramp-up included",
    # anchors 1.5 / 1.8: the monitor watches the server PID only; network counters host-wide.
    "server monitor watches the server process only: client CPU not measured",
    "network counters are host-wide per NIC, not the server's own traffic",
    # anchors 1.8: Total_Players counts the files in the log directory minus one.
    "Total_Players counted from log files, not taken from the configuration",
    # anchors 1.3 step 7 / 1.5: raw logs deleted, collected RTTs have no timestamps.
    "raw per-player logs deleted: RTT rows have no timestamps, t_s reconstructed from the 0.5 s "
    "logging interval counted back from each player's last row",
    # anchors 1.8 [computed]: ramp-up differed between runs (e.g. 284 s vs 364 s at 80 players).
    "players joined one by one over a ramp-up whose length differs between runs",
)

_RESULTS_RE = re.compile(r"^workload(?P<w>\d+)_results$")
_RESULTS_FILE_RE = re.compile(r"^(?P<proto>.+)_results\.csv$")
_SYSLOG_DIR_RE = re.compile(r"^system_logs_workload(?P<w>\d+)$")
_SYSLOG_FILE_RE = re.compile(r"^system_log_(?P<n>\d+)p_(?P<d>\d+(?:\.\d+)?)s\.csv$")
_COMMIT_RE = re.compile(r"\b[0-9a-f]{40}\b")


@dataclass
class _Run:
    """Everything read for one (prototype, workload, players)."""

    proto: str
    workload_dir: str
    players: int
    duration_s: float = DEFAULT_DURATION_S
    rtt_by_player: dict[int, list[float]] = field(default_factory=dict)
    zero_rtt_rows: int = 0
    syslog: dict[str, np.ndarray] | None = None
    nics: list[str] = field(default_factory=list)


# -- reading -------------------------------------------------------------------------------


def _read_results(
    path: Path, workload_dir: str, runs: dict[tuple[str, str, int], _Run], bad: BadRows
) -> None:
    m = _RESULTS_FILE_RE.match(path.name)
    proto = m.group("proto") if m else path.stem
    bad.touch(path)
    with path.open(newline="") as f:
        header_seen = False
        for line_no, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line:
                continue  # a blank line is not a row
            fields = line.split(",")
            if not header_seen:
                header_seen = True
                if fields == RESULTS_HEADER:
                    continue
                bad.add(path, line_no, f"expected header {','.join(RESULTS_HEADER)}")
                # no header: read the line as data if it looks like data
            if len(fields) != 3:
                bad.add(path, line_no, f"{len(fields)} fields, expected 3")
                continue
            try:
                player_id, total = int(fields[0]), int(fields[1])
            except ValueError:
                bad.add(path, line_no, "Player_ID or Total_Players not an integer")
                continue
            rtt_ms = parse_float(fields[2])
            if rtt_ms is None or rtt_ms < 0 or total < 1:
                bad.add(path, line_no, f"bad RoundTripDelay_ms {fields[2]!r} or Total_Players")
                continue
            run = runs.setdefault((proto, workload_dir, total), _Run(proto, workload_dir, total))
            if rtt_ms == 0:
                # Mirror's NetworkTime.rtt is 0 until its first ping returned: no estimate yet.
                run.zero_rtt_rows += 1
                continue
            run.rtt_by_player.setdefault(player_id, []).append(rtt_ms)


# psutil columns used (system_monitor.py, anchors 1.5). proc.cpu_percent is
# Process.cpu_percent(interval=None) since the previous sample, where 100 = one core (it exceeds
# 100 on several cores); the monitor's first call (which psutil answers with a meaningless 0.0)
# became the header row, so every data row has a real value. cpu.percent is host-wide (0-100
# over all CPUs).
_SYSLOG_NUMERIC = {
    "timestamp": "t_ms",  # time.time() * 1000
    "proc.cpu_times.user": "user_s",
    "proc.cpu_times.system": "system_s",
    "proc.cpu_percent": "cpu_percent",
    "proc.memory_info.rss": "rss_bytes",
}
_SYSLOG_OPTIONAL = {"proc.num_threads": "num_threads", "cpu.percent": "host_cpu_percent"}


def _read_syslog(path: Path, bad: BadRows) -> tuple[dict[str, np.ndarray], list[str]] | None:
    bad.touch(path)
    with path.open(newline="") as f:
        lines = f.read().splitlines()
    if not lines:
        bad.add(path, None, "empty file")
        return None
    header = lines[0].split(";")
    idx = {name: i for i, name in enumerate(header)}
    missing = [c for c in _SYSLOG_NUMERIC if c not in idx]
    if missing:
        bad.add(path, 1, f"header lacks {', '.join(missing)}")
        return None
    nics = sorted(
        c.removeprefix("net.bytes_recv.")
        for c in header
        if c.startswith("net.bytes_recv.") and f"net.bytes_sent.{c[15:]}" in idx
    )
    wanted: dict[str, int] = {key: idx[col] for col, key in _SYSLOG_NUMERIC.items()}
    optional = {key: idx[col] for col, key in _SYSLOG_OPTIONAL.items() if col in idx}
    for nic in nics:
        optional[f"rx.{nic}"] = idx[f"net.bytes_recv.{nic}"]
        optional[f"tx.{nic}"] = idx[f"net.bytes_sent.{nic}"]
    cols: dict[str, list[float]] = {k: [] for k in [*wanted, *optional]}
    for line_no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(";")
        if len(fields) != len(header):
            bad.add(path, line_no, f"{len(fields)} fields, expected {len(header)}")
            continue
        values = {k: parse_float(fields[i]) for k, i in wanted.items()}
        parsed = {k: v for k, v in values.items() if v is not None}
        if len(parsed) != len(values):
            bad.add(path, line_no, "timestamp, CPU times or RSS not a number")
            continue
        for k, v in parsed.items():
            cols[k].append(v)
        for k, i in optional.items():
            v = parse_float(fields[i])
            cols[k].append(np.nan if v is None else v)
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in cols.items()}
    order = np.argsort(arrays["t_ms"], kind="stable")  # the monitor appends in time order
    return {k: v[order] for k, v in arrays.items()}, nics


def _source_commit(root: Path) -> str | None:
    """The upstream commit the data was taken from, if SOURCE.md names one."""
    src = root / "SOURCE.md"
    if src.is_file():
        m = _COMMIT_RE.search(src.read_text(errors="replace"))
        if m:
            return m.group(0)
    return None


# -- building the tables -------------------------------------------------------------------


def _config(run: _Run) -> dict[str, Any]:
    proto = PROTOTYPES.get(run.proto)
    workload, params, _ = WORKLOADS.get(run.workload_dir, (run.workload_dir, {}, ()))
    prototype = proto.prototype if proto else run.proto.lower()
    transport = proto.transport if proto else "unknown"
    options = proto.transport_options if proto else {}
    return {
        "campaign": CAMPAIGN,
        "cell_id": cell_id(
            prototype, transport, run.players, workload, params, options, "lan", run.duration_s
        ),
        "run_id": RUN_ID,
        "block": run.workload_dir,
        "prototype": prototype,
        "library_version": proto.library_version if proto else None,
        "transport": transport,
        "transport_options": json.dumps(options, sort_keys=True),
        "players": run.players,
        "workload": workload,
        "params": json.dumps(params, sort_keys=True),
        "network_profile": "lan",
        "duration_s": run.duration_s,
        # Net-Celerity ran server and clients on separate DAS nodes (anchors 1.3).
        "isolation": "separate-nodes",
        "source": SOURCE,
    }


def _samples(run: _Run, cfg: dict[str, Any]) -> tuple[pl.DataFrame, np.ndarray]:
    """The run's RTT samples, and the rtt_us of those inside the window."""
    players, seqs, t_s, rtt = [], [], [], []
    # Player_IDs are numbered in the sorted order of the log files' GUID names (the collector),
    # not in join order; player = 1..N in that order.
    for player, pid in enumerate(sorted(run.rtt_by_player), start=1):
        values = run.rtt_by_player[pid]
        n = len(values)
        seq = np.arange(n, dtype=np.int64)
        players.append(np.full(n, player, dtype=np.int32))
        seqs.append(seq)
        # The last row was written in the last 0.5 s before the kill; -0.25 s is its expected
        # distance from the kill, which is the window's end.
        t_s.append(run.duration_s - LOG_INTERVAL_S / 2 - (n - 1 - seq) * LOG_INTERVAL_S)
        rtt.append(np.asarray(values, dtype=np.float64) * 1000.0)
    if not players:
        return pl.DataFrame(schema=SAMPLES_SCHEMA), np.empty(0)
    t_arr, rtt_arr = np.concatenate(t_s), np.concatenate(rtt)
    n = t_arr.size
    df = pl.DataFrame(
        {
            "campaign": pl.repeat(cfg["campaign"], n, eager=True),
            "cell_id": pl.repeat(cfg["cell_id"], n, eager=True),
            "run_id": pl.repeat(cfg["run_id"], n, eager=True),
            "t_unix_ns": pl.repeat(None, n, dtype=pl.Int64, eager=True),
            "t_s": t_arr,
            "player": np.concatenate(players),
            "seq": np.concatenate(seqs),
            "kind": pl.repeat("lib", n, eager=True),
            "rtt_us": rtt_arr,
            "send_late_us": np.full(n, np.nan),
            "source": pl.repeat(SOURCE, n, eager=True),
        },
        schema=SAMPLES_SCHEMA,
    )
    in_window = (t_arr >= 0) & (t_arr < run.duration_s)
    return df, rtt_arr[in_window]


def _resources(run: _Run, cfg: dict[str, Any]) -> tuple[pl.DataFrame, dict[str, Any], list[str]]:
    """Per-sample resource rows, the run's resource metrics, and flaws found on the way."""
    log = run.syslog
    assert log is not None
    t_ms = log["t_ms"]
    t_unix_ns = np.round(t_ms * 1e6).astype(np.int64)
    # The monitor was stopped just before the server was killed, at the end of the benchmark's
    # duration (anchors 1.3 steps 5-6): the window is the last duration_s of the log.
    window_start_ms = t_ms[-1] - run.duration_s * 1000.0
    t_s = (t_ms - window_start_ms) / 1000.0
    cpu_s = log["user_s"] + log["system_s"]
    series: list[tuple[str, str, str | None, np.ndarray]] = [
        ("server", "cpu_cores", None, counter_rates(t_s, cpu_s)),
        ("server", "cpu_cores_psutil", None, log["cpu_percent"] / 100.0),
        ("server", "rss_bytes", None, log["rss_bytes"]),
    ]
    if "num_threads" in log:
        series.append(("server", "num_threads", None, log["num_threads"]))
    if "host_cpu_percent" in log:
        series.append(("host", "cpu_percent", None, log["host_cpu_percent"]))
    for nic in run.nics:
        series.append(("host", "rx_bytes_per_s", nic, counter_rates(t_s, log[f"rx.{nic}"])))
        series.append(("host", "tx_bytes_per_s", nic, counter_rates(t_s, log[f"tx.{nic}"])))
    ids = {"campaign": cfg["campaign"], "cell_id": cfg["cell_id"], "run_id": cfg["run_id"]}
    frames = [
        resource_frame(ids, SOURCE, proc, metric, nic, t_unix_ns, t_s, values)
        for proc, metric, nic, values in series
    ]
    metrics: dict[str, Any] = {"server_rss_bytes": int(np.max(log["rss_bytes"]))}
    flaws: list[str] = []
    inside = np.flatnonzero(t_s >= 0)
    if inside.size >= 2:
        i0, i1 = int(inside[0]), int(inside[-1])
        wall = t_s[i1] - t_s[i0]
        metrics["server_cpu_cores"] = round(max(0.0, (cpu_s[i1] - cpu_s[i0]) / wall), 4)
        busiest: tuple[float, str] | None = None
        for nic in run.nics:
            if nic == "lo":
                continue  # the clients are on other nodes: loopback is not their traffic
            rx = log[f"rx.{nic}"][i1] - log[f"rx.{nic}"][i0]
            tx = log[f"tx.{nic}"][i1] - log[f"tx.{nic}"][i0]
            if not (np.isfinite(rx + tx) and rx >= 0 and tx >= 0):
                continue  # a missing or reset counter gives no rate
            if busiest is None or rx + tx > busiest[0]:
                busiest = (rx + tx, nic)
                metrics["server_rx_bytes_per_s"] = round(rx / wall, 1)
                metrics["server_tx_bytes_per_s"] = round(tx / wall, 1)
        if busiest is not None:
            flaws.append(f"server_rx/tx_bytes_per_s: host-wide counters of NIC {busiest[1]}")
    else:
        flaws.append("system log shorter than two samples in the window: no CPU or network rate")
    span_s = (t_ms[-1] - t_ms[0]) / 1000.0
    if span_s < run.duration_s:
        flaws.append(f"system log spans only {span_s:.0f} s of the {run.duration_s:g} s window")
    return concat(frames, RESOURCES_SCHEMA), metrics, flaws


def import_dir(path: Path) -> ImportResult:
    """Read a Net-Celerity data directory (see the module's docstring for its layout)."""
    root = Path(path)
    bad = BadRows(root)
    runs: dict[tuple[str, str, int], _Run] = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        m = _RESULTS_RE.match(d.name)
        if m:
            for f in sorted(d.glob("*_results.csv")):
                _read_results(f, f"workload{m.group('w')}", runs, bad)
            continue
        m = _SYSLOG_DIR_RE.match(d.name)
        if not m:
            continue
        workload_dir = f"workload{m.group('w')}"
        for proto_dir in sorted(p for p in d.iterdir() if p.is_dir()):
            for f in sorted(proto_dir.glob("system_log_*.csv")):
                fm = _SYSLOG_FILE_RE.match(f.name)
                if not fm:
                    bad.touch(f)
                    bad.add(f, None, "file name is not system_log_<N>p_<D>s.csv")
                    continue
                read = _read_syslog(f, bad)
                if read is None or read[0]["t_ms"].size == 0:
                    continue
                key = (proto_dir.name, workload_dir, int(fm.group("n")))
                run = runs.setdefault(key, _Run(*key))
                run.syslog, run.nics = read
                run.duration_s = float(fm.group("d"))

    commit = _source_commit(root)
    sample_frames, resource_frames, rows = [], [], []
    for key in sorted(runs, key=lambda k: (k[1], k[0], k[2])):
        run = runs[key]
        cfg = _config(run)
        proto = PROTOTYPES.get(run.proto)
        flaws = [*FLAWS, *(proto.flaws if proto else ("unknown prototype name",))]
        flaws += WORKLOADS.get(run.workload_dir, ("", {}, ("unknown workload directory",)))[2]
        row: dict[str, Any] = {**cfg, "status": "ok", "commit": commit}
        if run.rtt_by_player:
            samples, in_window = _samples(run, cfg)
            sample_frames.append(samples)
            row.update(rtt_metrics(in_window, "lib"))
            row["players_connected_max"] = len(run.rtt_by_player)
            if len(run.rtt_by_player) != run.players:
                flaws.append(
                    f"{len(run.rtt_by_player)} distinct Player_IDs for Total_Players="
                    f"{run.players} (runs appended, or clients missing)"
                )
        else:
            flaws.append("no RTT results stored for this run (system log only)")
        if run.zero_rtt_rows:
            flaws.append(f"{run.zero_rtt_rows} row(s) with RTT 0 (no estimate yet) dropped")
        if run.syslog is not None:
            res, metrics, res_flaws = _resources(run, cfg)
            resource_frames.append(res)
            row.update(metrics)
            flaws += res_flaws
        else:
            flaws.append("no system log: no server CPU, memory or network figures")
        row["flaws"] = join_flaws(flaws)
        rows.append(row)

    dataset_flaws = list(FLAWS)
    for p in PROTOTYPES.values():
        dataset_flaws += [f for f in p.flaws if f not in dataset_flaws]
    for w in WORKLOADS.values():
        dataset_flaws += list(w[2])
    if not any(r.proto == "DOTS-NFE" and r.rtt_by_player for r in runs.values()):
        # SOURCE.md / anchors 1.9: the DOTS-NFE result CSVs were never stored whole.
        dataset_flaws.append("DOTS-NFE RTT results missing: only its system logs are stored")
    return ImportResult(
        samples=concat(sample_frames, SAMPLES_SCHEMA),
        runs=rows_frame(rows, RUNS_SCHEMA),
        resources=concat(resource_frames, RESOURCES_SCHEMA),
        bad_rows=bad.counts,
        flaws=dataset_flaws,
        problems=bad.problems,
    )
