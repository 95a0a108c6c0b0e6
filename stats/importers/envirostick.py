"""Envirostick's player and server logs -> Netstick's samples, runs and resources tables.

Envirostick's benchmark repository (scripts, configs, data) could not be obtained, so only the
log formats written by its three prototypes are known (atlarge-research/Opencraft-2-Netcode-
prototypes, branches Mirror_benchmark, FishNet-Benchmark, NFGO_benchmark; the project's notes on
prior benchmarks, anchors-seeds.md section 2, cited below as "anchors 2.x"). Every library writes
into ``<build>_Data/mirror_logs/``:

- ``player_log_<GUID>.csv``, one per player process, every 0.5 s (InvokeRepeating 0.5 s):
  ``Timestamp,PlayerPosition_X,PlayerPosition_Y,PlayerPosition_Z,RoundTripDelay_ms,Memory:MB,
  Frame Time:ms`` (anchors 2.4).
- ``server_log.csv``, every 0.5 s: ``Timestamp,Uptime(seconds),PlayerCount,ObjectCount,
  Memory:MB,Frame Time:ms`` (anchors 2.4). Both files are opened in append mode and write their
  header on every start, so a reused directory holds several sessions, each after a header line
  (seen in the server logs committed to the prototypes' repository).
- Timestamp is ``DateTime.Now`` as ``yyyy-MM-dd HH:mm:ss``: local time, 1 s resolution, so two
  rows share each second. Memory is Unity's "System Used Memory" in whole MiB (integer division
  by 1024 * 1024); frame time is the mean of the last 15 "Main Thread" samples in ms (F1). Both
  profiler recorders read 0 in the first row, and the frame time stays 0 outside Development
  Builds (anchors 2.4), so 0 is read as "not recorded".

Which library, workload and parameters a directory holds is not in the logs (the command line
line is commented out in the loggers). A run directory is any directory holding player_log_*.csv
or server_log.csv; its configuration comes from an optional ``run.json`` next to the logs or in
the parent of a ``mirror_logs`` directory (ours, not Envirostick's: keys prototype, transport,
library_version, workload, params, players, duration_s, block, run_id), else from words in its
path (mirror | fishnet | ngo/nfgo; rl/resource/world with small | medium | large | extra_large,
ri/rpc, em/envmod/environment), else "unknown" (and the runs table's flaws say so).

Mapping: RTT samples kind "lib" (each library's own estimate), rtt_us = ms * 1000; RTT 0 means
"no estimate" (Mirror before its first ping, NGO's GetCurrentRtt on clients) and is dropped and
counted in the run's flaws. t_s = 0 is the first row of the run's first player (its spawn);
the window is [0, duration_s). One run per session; run_id r1 (r2, ... for further sessions of
the same cell).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import polars as pl

from stats.importers import (
    RESOURCES_SCHEMA,
    BadRows,
    ImportResult,
    cell_id,
    concat,
    join_flaws,
    parse_float,
    resource_frame,
    rtt_metrics,
)
from stats.tables import RUNS_SCHEMA, SAMPLES_SCHEMA, rows_frame

SOURCE = "envirostick"
CAMPAIGN = "envirostick"
PLAYER_HEADER = (
    "Timestamp,PlayerPosition_X,PlayerPosition_Y,PlayerPosition_Z,RoundTripDelay_ms,"
    "Memory:MB,Frame Time:ms"
)
SERVER_HEADER = "Timestamp,Uptime(seconds),PlayerCount,ObjectCount,Memory:MB,Frame Time:ms"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
# Envirostick ran on DAS-5 (Netherlands); DateTime.Now wrote the node's local time without zone.
DEFAULT_TZ = "Europe/Amsterdam"
MIB = 1024 * 1024
LOG_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Library:
    prototype: str
    transport: str
    library_version: str
    transport_options: dict[str, str]
    flaws: tuple[str, ...]


# anchors 2.5 (versions, transports, RTT APIs) and 2.6 (weaknesses).
LIBRARIES: dict[str, Library] = {
    "mirror": Library(
        "mirror",
        "kcp",
        "86.13.4",
        {
            "port": "7777",
            "NoDelay": "1",
            "Interval": "10",
            "Timeout": "10000",
            "FastResend": "2",
            "SendWindowSize": "4096",
            "ReceiveWindowSize": "4096",
            "MaxRetransmit": "40",
        },
        (
            "RTT is Mirror NetworkTime.rtt * 1000 (EMA of frame-time-stamped pings, "
            "unformatted double)",
            # anchors 2.6: targetFrameRate = sendRate commented out in NetworkManager.cs.
            "Mirror core patched (targetFrameRate = sendRate removed): not pristine, frame rates "
            "differ from Net-Celerity's Mirror",
            # anchors 2.6 [inferred risk]: headlessStartMode AutoStartServer in the scene.
            "scene sets headlessStartMode AutoStartServer: headless clients may also start a "
            "server (inferred)",
        ),
    ),
    "fishnet": Library(
        "fishnet",
        "tugboat",
        "4.2.2",
        {},  # no Tugboat fields in the scene or prefab: library defaults (anchors 2.5)
        ("RTT is FishNet TimeManager.RoundTripTime: whole ms, includes the tick-rate latency",),
    ),
    "ngo": Library(
        "ngo",
        "utp",
        "1.9.1 (embedded develop snapshot)",
        {
            "Port": "7777",
            "ServerListenAddress": "127.0.0.1",
            "HeartbeatTimeout": "500",
            "MaxPayloadSize": "6144",
        },
        (
            # anchors 2.5 / 2.6: "place holder since cant find a way to measure rtt in NFGO";
            # NGO issue #2988: GetCurrentRtt returns 0 on clients.
            "RTT is UnityTransport GetCurrentRtt (whole ms): a placeholder per its authors, "
            "returns 0 on clients (NGO issue #2988)",
            "ServerListenAddress 127.0.0.1: the server binds loopback only (inferred)",
        ),
    ),
}
_LIBRARY_WORDS = {"mirror": "mirror", "fishnet": "fishnet", "ngo": "ngo", "nfgo": "ngo"}

# Workload words -> Netstick workload (CONTRACT.md section 5 names Envirostick's three).
_WORKLOAD_WORDS = {
    "rl": "world",
    "resource": "world",
    "world": "world",
    "ri": "rpc-toggle",
    "rpc": "rpc-toggle",
    "toggle": "rpc-toggle",
    "em": "envmod",
    "envmod": "envmod",
    "environment": "envmod",
}
# -setWorldSize (anchors 2.3): the real block counts are 7,500 / 17,500 / 40,000 / 50,000; the
# first three are CONTRACT.md's S / M / L.
_WORLD_SIZES = {"small": {"size": "S"}, "medium": {"size": "M"}, "large": {"size": "L"}}
_WORKLOAD_FLAWS = {
    "world": (
        "world sizes: code comments claim 5k/15k/30k/40k objects, the loops build 7,500 / "
        "17,500 / 40,000 / 50,000",
    ),
    "envmod": ("-enviroment_load is positional and order-dependent, without validation",),
}

# Flaws of every Envirostick run (anchors 2.1, 2.4, 2.6).
FLAWS: tuple[str, ...] = (
    "benchmark repository unavailable: scripts, configuration and repetitions unknown (the "
    "thesis artifact runs each experiment once)",
    "no common RTT probe: each library's own estimate, with different semantics and resolution",
    "timestamps are the node's local time with 1 s resolution (two rows per second)",
    "memory is Unity's System Used Memory in whole MiB (not RSS) and frame time needs a "
    "Development Build",
    "no CPU or network counters in the logs",
    "libraries and transports switched in the Unity editor, builds made by hand",
)


@dataclass
class _Player:
    name: str
    t: list[datetime] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)
    rtt_ms: list[float] = field(default_factory=list)
    memory_mb: list[float] = field(default_factory=list)  # NaN = not recorded
    frame_ms: list[float] = field(default_factory=list)  # NaN = not recorded
    mem_t: list[datetime] = field(default_factory=list)  # time of every parsed row
    zero_rtt: int = 0


@dataclass
class _ServerRow:
    t: datetime
    uptime_s: float
    players: int
    objects: int
    memory_mb: float
    frame_ms: float


def _not_recorded(v: float) -> float:
    # Profiler recorders read 0 before their first sample (and frame time without a dev build).
    return np.nan if v == 0 else v


def _parse_ts(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, TIMESTAMP_FORMAT)
    except ValueError:
        return None


def _read_player(path: Path, bad: BadRows) -> _Player:
    bad.touch(path)
    p = _Player(path.name)
    header_seen = False
    row_no = 0
    with path.open(newline="", errors="replace") as f:
        for line_no, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line:
                continue
            if line == PLAYER_HEADER:
                if header_seen:
                    bad.add(path, line_no, "repeated header")
                header_seen = True
                continue
            if not header_seen:
                # e.g. the command-line line older builds wrote before the header
                bad.add(path, line_no, "not a log row (before the header)")
                continue
            fields = line.split(",")
            if len(fields) != 7:
                # a decimal comma (non-invariant culture) also lands here
                bad.add(path, line_no, f"{len(fields)} fields, expected 7")
                continue
            t = _parse_ts(fields[0])
            rtt = parse_float(fields[4])
            memory = parse_float(fields[5])
            # An older build wrote "Frame Time: 12.0" (a committed dev log); accept that prefix.
            frame = parse_float(fields[6].removeprefix("Frame Time:").strip())
            if t is None or rtt is None or rtt < 0 or memory is None or frame is None:
                bad.add(path, line_no, "bad timestamp, RoundTripDelay_ms, Memory or Frame Time")
                continue
            seq = row_no
            row_no += 1
            p.mem_t.append(t)
            p.memory_mb.append(_not_recorded(memory))
            p.frame_ms.append(_not_recorded(frame))
            if rtt == 0:
                p.zero_rtt += 1  # no estimate yet (Mirror) or never (NGO on clients)
                continue
            p.t.append(t)
            p.seq.append(seq)
            p.rtt_ms.append(rtt)
    return p


def _read_server(path: Path, bad: BadRows) -> list[list[_ServerRow]]:
    """The server log's sessions (a header line starts each), in file order."""
    bad.touch(path)
    sessions: list[list[_ServerRow]] = []
    with path.open(newline="", errors="replace") as f:
        for line_no, raw in enumerate(f, start=1):
            line = raw.strip()
            if not line:
                continue
            if line == SERVER_HEADER:
                sessions.append([])
                continue
            if not sessions:
                bad.add(path, line_no, "not a log row (before the header)")
                continue
            fields = line.split(",")
            if len(fields) != 6:
                bad.add(path, line_no, f"{len(fields)} fields, expected 6")
                continue
            t = _parse_ts(fields[0])
            nums = [v for v in (parse_float(x) for x in fields[1:]) if v is not None]
            if t is None or len(nums) != 5:
                bad.add(path, line_no, "bad timestamp or number")
                continue
            uptime, players, objects, memory, frame = nums
            row = _ServerRow(
                t, uptime, int(players), int(objects), _not_recorded(memory), _not_recorded(frame)
            )
            sessions[-1].append(row)
    return [s for s in sessions if s]


# -- configuration -------------------------------------------------------------------------


def _words(rel: Path) -> list[str]:
    return [w for w in re.split(r"[/\\_\-. ]+", str(rel).lower()) if w]


def _config(run_dir: Path, root: Path, problems: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The run's configuration and the flaws of how it was found."""
    flaws: list[str] = []
    doc: dict[str, Any] = {}
    for d in (run_dir, run_dir.parent if run_dir.name == "mirror_logs" else None):
        if d is not None and (d / "run.json").is_file():
            try:
                loaded = json.loads((d / "run.json").read_text())
                if isinstance(loaded, dict):
                    doc = loaded
                else:
                    problems.append(f"{d / 'run.json'}: not a JSON object; ignored")
            except (OSError, json.JSONDecodeError) as exc:
                problems.append(f"{d / 'run.json'}: {exc}; ignored")
            break
    words = _words(run_dir.relative_to(root)) if run_dir != root else []
    lib_name = str(doc.get("prototype") or "").lower() or next(
        (_LIBRARY_WORDS[w] for w in words if w in _LIBRARY_WORDS), None
    )
    lib = LIBRARIES.get(_LIBRARY_WORDS.get(lib_name or "", lib_name or ""))
    workload = doc.get("workload") or next(
        (_WORKLOAD_WORDS[w] for w in words if w in _WORKLOAD_WORDS), None
    )
    params = {str(k): str(v) for k, v in (doc.get("params") or {}).items()}
    if workload == "world" and not params:
        if "extra" in words:
            params = {"objects": "50000"}
        else:
            params = next((_WORLD_SIZES[w] for w in words if w in _WORLD_SIZES), {})
    if not doc:
        flaws.append("configuration not in the logs: taken from the directory names")
    if lib is None and not lib_name:
        flaws.append("library unknown")
    if not workload:
        flaws.append("workload unknown")
    cfg = {
        "prototype": lib.prototype if lib else (lib_name or "unknown"),
        "transport": doc.get("transport") or (lib.transport if lib else "unknown"),
        "library_version": doc.get("library_version") or (lib.library_version if lib else None),
        "transport_options": lib.transport_options if lib else {},
        "workload": workload or "unknown",
        "params": params,
        "players": doc.get("players"),
        "duration_s": doc.get("duration_s"),
        "block": doc.get("block"),
        "run_id": doc.get("run_id"),
    }
    if lib:
        flaws += lib.flaws
    flaws += _WORKLOAD_FLAWS.get(cfg["workload"], ())
    return cfg, flaws


# -- building the tables -------------------------------------------------------------------


class _Clock:
    def __init__(self, tz: str) -> None:
        try:
            self.zone: ZoneInfo | None = ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            self.zone = None  # read as UTC
        self.name = tz if self.zone else "UTC"

    def ns(self, t: datetime) -> int:
        aware = t.replace(tzinfo=self.zone or UTC)
        return int(aware.timestamp()) * 1_000_000_000


def _long(
    ids: dict[str, str], proc: str, metric: str, t_ns: np.ndarray, t0_ns: int, values: np.ndarray
) -> pl.DataFrame:
    return resource_frame(ids, SOURCE, proc, metric, None, t_ns, (t_ns - t0_ns) / 1e9, values)


def _build_run(
    cfg: dict[str, Any],
    cfg_flaws: list[str],
    players: list[_Player],
    server: list[_ServerRow],
    clock: _Clock,
) -> tuple[dict[str, Any], pl.DataFrame, pl.DataFrame]:
    flaws = [*FLAWS, *cfg_flaws]
    flaws.append(f"timestamps read as {clock.name} time")
    players = sorted(players, key=lambda p: (p.mem_t[0] if p.mem_t else datetime.max, p.name))
    starts = [p.mem_t[0] for p in players if p.mem_t]
    first = min(starts) if starts else (server[0].t if server else None)
    t0_ns = clock.ns(first) if first else 0
    ends = [p.mem_t[-1] for p in players if p.mem_t]
    duration = cfg["duration_s"]
    if duration is None:
        last = max(ends) if ends else (server[-1].t if server else first)
        # 1 s timestamps: the last row lies somewhere in its second
        duration = (clock.ns(last) - t0_ns) / 1e9 + 1.0 if last else 0.0
        flaws.append("duration not recorded: the span of the player logs")
    n_players = int(cfg["players"]) if cfg["players"] is not None else len(players)
    ids = {
        "campaign": CAMPAIGN,
        "cell_id": cell_id(
            cfg["prototype"], cfg["transport"], n_players, cfg["workload"], cfg["params"],
            cfg["transport_options"], "lan", float(duration),
        ),
        "run_id": "r1",  # the caller sets the final run_id
    }  # fmt: skip
    sample_frames, resource_frames = [], []
    in_window: list[np.ndarray] = []
    zero = 0
    for index, p in enumerate(players, start=1):
        zero += p.zero_rtt
        t_ns = np.array([clock.ns(t) for t in p.t], dtype=np.int64)
        rtt_us = np.asarray(p.rtt_ms, dtype=np.float64) * 1000.0
        t_s = (t_ns - t0_ns) / 1e9
        n = t_ns.size
        sample_frames.append(
            pl.DataFrame(
                {
                    "campaign": pl.repeat(CAMPAIGN, n, eager=True),
                    "cell_id": pl.repeat(ids["cell_id"], n, eager=True),
                    "run_id": pl.repeat(ids["run_id"], n, eager=True),
                    "t_unix_ns": t_ns,
                    "t_s": t_s,
                    "player": np.full(n, index, dtype=np.int32),
                    "seq": np.asarray(p.seq, dtype=np.int64),
                    "kind": pl.repeat("lib", n, eager=True),
                    "rtt_us": rtt_us,
                    "send_late_us": np.full(n, np.nan),
                    "source": pl.repeat(SOURCE, n, eager=True),
                },
                schema=SAMPLES_SCHEMA,
            )
        )
        in_window.append(rtt_us[(t_s >= 0) & (t_s < duration)])
        mem_t = np.array([clock.ns(t) for t in p.mem_t], dtype=np.int64)
        proc = f"client-{index}"
        resource_frames.append(
            _long(ids, proc, "memory_bytes", mem_t, t0_ns, np.asarray(p.memory_mb) * MIB)
        )
        resource_frames.append(
            _long(ids, proc, "frame_time_ms", mem_t, t0_ns, np.asarray(p.frame_ms))
        )
    row: dict[str, Any] = {
        **ids,
        "block": cfg["block"],
        "prototype": cfg["prototype"],
        "library_version": cfg["library_version"],
        "transport": cfg["transport"],
        "transport_options": json.dumps(cfg["transport_options"], sort_keys=True),
        "players": n_players,
        "workload": cfg["workload"],
        "params": json.dumps(cfg["params"], sort_keys=True),
        "network_profile": "lan",
        "duration_s": float(duration),
        "status": "ok",
        "isolation": "separate-nodes",  # DAS-5 nodes (envirostick.yaml); not namespaces
        "source": SOURCE,
    }
    if in_window:
        row.update(rtt_metrics(np.concatenate(in_window), "lib"))
    if zero:
        flaws.append(f"{zero} row(s) with RTT 0 (no estimate) dropped")
    if not players:
        flaws.append("no player logs")
    elif not any(p.rtt_ms for p in players):
        flaws.append("no RTT estimate in any player log")
    if server:
        s_ns = np.array([clock.ns(r.t) for r in server], dtype=np.int64)
        series = {
            "memory_bytes": np.array([r.memory_mb for r in server]) * MIB,
            "frame_time_ms": np.array([r.frame_ms for r in server]),
            "players_connected": np.array([r.players for r in server], dtype=np.float64),
            # ObjectCount = networked objects minus players (the loggers subtract them)
            "networked_objects": np.array([r.objects for r in server], dtype=np.float64),
        }
        for metric, values in series.items():
            resource_frames.append(_long(ids, "server", metric, s_ns, t0_ns, values))
        mem = series["memory_bytes"]
        if np.isfinite(mem).any():
            row["server_rss_bytes"] = int(np.nanmax(mem))
            flaws.append("server_rss_bytes is the peak of Unity's System Used Memory (MiB)")
        row["players_connected_max"] = max(r.players for r in server)
    else:
        flaws.append("no server log")
    row["flaws"] = join_flaws(flaws)
    return (
        row,
        concat(sample_frames, SAMPLES_SCHEMA),
        concat(resource_frames, RESOURCES_SCHEMA),
    )


def import_dir(path: Path, tz: str = DEFAULT_TZ) -> ImportResult:
    """Read every Envirostick run directory under path (see the module's docstring)."""
    root = Path(path)
    bad = BadRows(root)
    problems: list[str] = []
    clock = _Clock(tz)
    run_dirs = sorted(
        {p.parent for p in root.rglob("player_log_*.csv")}
        | {p.parent for p in root.rglob("server_log.csv")}
    )
    rows, sample_frames, resource_frames = [], [], []
    used: dict[str, int] = {}
    for run_dir in run_dirs:
        cfg, cfg_flaws = _config(run_dir, root, problems)
        players = [_read_player(f, bad) for f in sorted(run_dir.glob("player_log_*.csv"))]
        server_log = run_dir / "server_log.csv"
        sessions = _read_server(server_log, bad) if server_log.is_file() else []
        # Assign each player log to the last server session that started before it (with 1 s
        # of slack for the timestamps' resolution); a directory without a server log is one run.
        groups: list[tuple[list[_Player], list[_ServerRow]]] = [([], s) for s in sessions] or [
            ([], [])
        ]
        for p in players:
            i = 0
            if p.mem_t and sessions:
                for k, s in enumerate(sessions):
                    if (s[0].t - p.mem_t[0]).total_seconds() <= 1:
                        i = k
            groups[i][0].append(p)
        for group_players, server in groups:
            if not group_players and not server:
                continue
            extra = ["several sessions in one log directory"] if len(groups) > 1 else []
            row, samples, resources = _build_run(
                cfg, [*cfg_flaws, *extra], group_players, server, clock
            )
            # run_id: run.json's, else r1, or the next free rK when a cell recurs (another
            # session or directory of the same configuration).
            k = used.get(row["cell_id"], 0) + 1
            used[row["cell_id"]] = k
            run_id = str(cfg["run_id"]) if cfg["run_id"] and len(groups) == 1 else f"r{k}"
            row["run_id"] = run_id
            rows.append(row)
            sample_frames.append(samples.with_columns(run_id=pl.lit(run_id)))
            resource_frames.append(resources.with_columns(run_id=pl.lit(run_id)))
    flaws = list(FLAWS)
    for lib in LIBRARIES.values():
        flaws += [f for f in lib.flaws if f not in flaws]
    return ImportResult(
        samples=concat(sample_frames, SAMPLES_SCHEMA),
        runs=rows_frame(rows, RUNS_SCHEMA),
        resources=concat(resource_frames, RESOURCES_SCHEMA),
        bad_rows=bad.counts,
        flaws=flaws,
        problems=[*problems, *bad.problems],
    )
