"""bench-prototypes: every reference transport at 50 and 200 players, checked against targets.

Each cell is one local run (workflow.cli.bench.localrun): stream workload, 100 B at 60 Hz per player,
12 s after all players connected with the first 2 s excluded as warm-up, server pinned to CPU 0
and the client to CPU 1. A failed cell is recorded with its error and the bench goes on.

The JSON file holds one record per (transport, players), the provenance of the numbers, and a
`targets` section with each target's measured value and pass/fail.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflow.cli.bench.localrun import LocalRunError, LocalRunResult, RunConfig, run_local
from workflow.harness import provenance

TRANSPORTS = ("tcp", "udp", "kcp", "enet", "quic", "ws", "webrtc")
BENCH_PLAYERS = (50, 200)
BENCH_DURATION_S = 12.0
BENCH_WARMUP_S = 2.0
STREAM_PARAMS = {"size": "100", "rate": "60"}
SERVER_CPU = 0
CLIENT_CPU = 1
RESULT_SCHEMA = 1


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

    def passes(self, value: float) -> bool:
        return value <= self.threshold if self.op == "<=" else value >= self.threshold


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


def record_from_result(res: LocalRunResult) -> dict[str, Any]:
    """One JSON record per cell: the metrics, then how they were obtained."""
    players_per_core = None
    if res.client_cpu_cores is not None and res.client_cpu_cores > 0 and res.ok:
        players_per_core = res.players / res.client_cpu_cores
    return {
        "transport": res.transport,
        "players": res.players,
        "ok": res.ok,
        "error": res.error,
        "rtt_p50_us": res.rtt_p50_us,
        "rtt_p95_us": res.rtt_p95_us,
        "rtt_p99_us": res.rtt_p99_us,
        "rtt_max_us": res.rtt_max_us,
        "rtt_samples": res.rtt_samples,
        "send_late_p99_us": res.send_late_p99_us,
        "server_cpu_cores": res.server_cpu_cores,
        "client_cpu_cores": res.client_cpu_cores,
        "players_per_client_core": players_per_core,
        "server_rss_bytes": res.server_rss_bytes,
        "client_rss_bytes": res.client_rss_bytes,
        "connect_s": res.connect_s,
        "probe_loss_ratio": res.probe_loss_ratio,
        "players_connected": res.players_connected,
        "server_players_max": res.server_players_max,
        "server_exit_code": res.server_exit_code,
        "client_exit_code": res.client_exit_code,
        "duration_s": res.duration_s,
        "warmup_s": res.warmup_s,
        "window_start_unix_ns": res.window_start_unix_ns,
        "window_end_unix_ns": res.window_end_unix_ns,
        "workload": res.workload,
        "params": res.params,
        "pinned_cpus": res.pinned_cpus,
        "sampler_cpu_s": res.sampler_cpu_s,
        "contract_violations": res.contract_violations,
        "commands": {
            "server": shlex.join(res.server_argv),
            "client": shlex.join(res.client_argv),
        },
        "run_dir": res.run_dir,
    }


def repo_relative(value: Any, repo: Path) -> Any:
    """Paths inside the repository written relative to it: results are committed and must
    not carry the layout of the machine that measured them."""
    prefix = f"{repo.resolve()}/"
    if isinstance(value, str):
        return value.replace(prefix, "")
    if isinstance(value, dict):
        return {k: repo_relative(v, repo) for k, v in value.items()}
    if isinstance(value, list):
        return [repo_relative(v, repo) for v in value]
    return value


def failed_record(transport: str, players: int, error: str, cfg: RunConfig) -> dict[str, Any]:
    """The record of a cell that could not run at all (e.g. the server never became ready)."""
    return {
        "transport": transport,
        "players": players,
        "ok": False,
        "error": error,
        "duration_s": cfg.duration_s,
        "warmup_s": cfg.warmup_s,
        "run_dir": str(cfg.run_dir),
    }


def evaluate_targets(
    records: Sequence[dict[str, Any]], targets: Sequence[Target] = TARGETS
) -> list[dict[str, Any]]:
    """Each target for each of its transports that was run: measured value and pass/fail.

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
                "pass": value is not None and rec.get("ok", False) and target.passes(value),
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


def write_json_atomically(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # readers never see a half-written file


def run_bench(
    binary: Path,
    out: Path,
    raw_dir: Path,
    repo: Path,
    transports: Sequence[str] = TRANSPORTS,
    players: Sequence[int] = BENCH_PLAYERS,
    duration_s: float = BENCH_DURATION_S,
    warmup_s: float = BENCH_WARMUP_S,
    pin: bool = True,
    repetitions: int = 3,
    progress: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Run the matrix, write the JSON document to out, and return it."""
    records: list[dict[str, Any]] = []
    prov = provenance.collect(repo, binary)
    stamp = prov["timestamp_utc"].replace(":", "").replace("+0000", "Z")
    cells = [(t, n) for t in transports for n in players]
    for i, (transport, n) in enumerate(cells, start=1):
        reps: list[dict[str, Any]] = []
        for r in range(1, repetitions + 1):
            cfg = RunConfig(
                binary=binary,
                transport=transport,
                players=n,
                duration_s=duration_s,
                warmup_s=warmup_s,
                run_dir=raw_dir / stamp / f"{transport}-{n}-r{r}",
                workload="stream",
                params=STREAM_PARAMS,
                run_id=f"bench-{transport}-{n}-r{r}",
                seed=r,
                pin_server_cpu=SERVER_CPU if pin else None,
                pin_client_cpu=CLIENT_CPU if pin else None,
            )
            progress(f"[{i}/{len(cells)}] {transport} {n} players, run {r}/{repetitions} ...")
            try:
                rec = record_from_result(run_local(cfg))
            except LocalRunError as exc:
                rec = failed_record(transport, n, str(exc), cfg)
            except Exception as exc:  # a harness bug in one cell must not lose the others
                error = "".join(traceback.format_exception(exc)).rstrip()
                rec = failed_record(transport, n, f"internal error: {error}", cfg)
            reps.append(repo_relative(rec, repo))
        rec = combine_repetitions(reps)
        records.append(rec)
        status = "ok" if rec["ok"] else f"FAILED: {(rec['error'] or '').splitlines()[0]}"
        progress(f"[{i}/{len(cells)}] {transport} {n} players: {status}")
        doc = _document(records, prov, transports, players, duration_s, warmup_s, pin)
        doc["config"]["repetitions"] = repetitions
        write_json_atomically(out, doc)  # after every cell: an interrupted bench keeps its data
    doc = _document(records, prov, transports, players, duration_s, warmup_s, pin)
    doc["config"]["repetitions"] = repetitions
    return doc


# Metrics summarised over repetitions by their median (single runs on two shared cores vary).
MEDIAN_METRICS = (
    "rtt_p50_us", "rtt_p95_us", "rtt_p99_us", "rtt_max_us", "send_late_p99_us",
    "server_cpu_cores", "client_cpu_cores", "players_per_client_core", "server_rss_bytes",
    "client_rss_bytes", "connect_s", "probe_loss_ratio",
)  # fmt: skip


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


def _document(
    records: list[dict[str, Any]],
    prov: dict[str, Any],
    transports: Sequence[str],
    players: Sequence[int],
    duration_s: float,
    warmup_s: float,
    pin: bool,
) -> dict[str, Any]:
    return {
        "schema": RESULT_SCHEMA,
        "benchmark": "bench-prototypes",
        "config": {
            "transports": list(transports),
            "players": list(players),
            "workload": "stream",
            "params": STREAM_PARAMS,
            "duration_s": duration_s,
            "warmup_s": warmup_s,
            "measurement_window": "[connected + warmup_s, connected + duration_s)",
            "pinning": {"server_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU} if pin else None,
            "percentile_method": "numpy linear (Hyndman-Fan type 7)",
        },
        "provenance": prov,
        "records": records,
        "targets": evaluate_targets(records),
        "targets_note": TARGETS[0].note,
    }


def target_summary(doc: dict[str, Any]) -> str:
    """A few lines for the terminal: each target's verdict."""
    lines = []
    for t in doc["targets"]:
        measured = t["measured"]
        shown = f"{measured:.4g}" if isinstance(measured, float | int) else "n/a"
        verdict = "PASS" if t["pass"] else "FAIL"
        lines.append(
            f"{verdict}  {t['target']:<24} {t['transport']:<7} {t['players']:>4} players: "
            f"{t['metric']} = {shown} (target {t['op']} {t['threshold']:g})"
        )
    return "\n".join(lines)
