"""Run one short experiment on loopback, without a sandbox: one server, one client process.

Steps: pick a free port; start the server and wait for its `NETSTICK READY` line; start the client
(it emulates all players); sample both process trees; wait for the client to finish its
duration; SIGTERM the server (SIGKILL after 3 s); summarise the logs over the measurement window
[connected + warmup_s, connected + duration_s).

Every process is started in its own session (so its own process group) and its group is killed
in a finally block, whatever happens: a run never leaves orphans behind.

Layout of run_dir:
    logs/                       the prototypes' -log-dir (only contract files, see check-logs)
    server.stdout.log, server.stderr.log, client-0.stdout.log, client-0.stderr.log
    monitor.csv                 the sampler's rows (monitors.sampler)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from monitors.sampler import Sampler
from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.logs import parse_detail, read_events_csv, read_rtt_csv, read_ticks_csv
from prototypes.contract.processes import (
    CONNECTED_PREFIX,
    LOOPBACK,
    READY_PREFIX,
    Child,
    affinity,
    parse_netstick_line,
    pick_free_port,
    signal_group,
    spawn,
    tail,
    terminate,
)
from stats.resources import mean_cpu_cores, peak_rss_bytes
from stats.summary import summarize_by_kind

CLIENT_EXIT_SLACK_S = 30.0
CLIENT_PROC = "client-0"


class LocalRunError(RuntimeError):
    """A run could not be carried out (binary missing, server never ready, ...)."""


@dataclass(frozen=True, slots=True)
class RunConfig:
    """One local experiment: which binary, transport and load, and where its files go."""

    binary: Path
    transport: str
    players: int
    duration_s: float
    run_dir: Path
    warmup_s: float = 2.0
    workload: str = "stream"
    params: Mapping[str, str] = field(default_factory=lambda: {"size": "100", "rate": "60"})
    host: str = LOOPBACK
    port: int | None = None  # None: pick a free one
    run_id: str = "local"
    seed: int = 1
    pin_server_cpu: int | None = None
    pin_client_cpu: int | None = None
    ready_timeout_s: float = 10.0
    sample_interval_s: float = 0.5
    check_logs: bool = True
    extra_server_flags: Sequence[str] = ()
    extra_client_flags: Sequence[str] = ()


@dataclass(slots=True)
class LocalRunResult:
    """What one local run measured. Times are µs, CPU is cores (1.0 = one core busy)."""

    transport: str
    players: int
    duration_s: float
    warmup_s: float
    workload: str
    params: dict[str, str]
    port: int
    run_dir: str
    server_argv: list[str]
    client_argv: list[str]
    pinned_cpus: dict[str, list[int]] | None = None  # proc -> CPUs it was allowed to run on
    server_exit_code: int | None = None
    client_exit_code: int | None = None
    connect_s: float | None = None
    players_connected: int | None = None  # from the client's CONNECTED line
    server_players_max: int | None = None  # most players_connected in server.ticks.csv
    window_start_unix_ns: int | None = None
    window_end_unix_ns: int | None = None
    rtt_samples: int = 0
    rtt_p50_us: float | None = None
    rtt_p95_us: float | None = None
    rtt_p99_us: float | None = None
    rtt_max_us: float | None = None
    send_late_p99_us: float | None = None
    server_cpu_cores: float | None = None
    client_cpu_cores: float | None = None
    server_rss_bytes: int | None = None  # peak over the run
    client_rss_bytes: int | None = None
    probe_loss_ratio: float | None = None  # lost / sent of kind net, from the probes events
    sampler_cpu_s: float | None = None
    contract_violations: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.client_exit_code == 0 and self.server_exit_code == 0


# -- pure helpers (tested without a prototype) -------------------------------------------------


def _fmt_number(x: float) -> str:
    return f"{x:g}"


def _param_flags(params: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    for key, value in params.items():
        out += ["-param", f"{key}={value}"]
    return out


def server_argv(cfg: RunConfig, port: int, log_dir: Path) -> list[str]:
    """The server's command line (CONTRACT.md section 1); it runs until SIGTERM."""
    return [
        str(cfg.binary),
        "-role", "server",
        "-transport", cfg.transport,
        "-host", cfg.host,
        "-port", str(port),
        "-workload", cfg.workload,
        *_param_flags(cfg.params),
        "-duration", "0",
        "-log-dir", str(log_dir),
        "-run-id", cfg.run_id,
        "-seed", str(cfg.seed),
        *cfg.extra_server_flags,
    ]  # fmt: skip


def client_argv(cfg: RunConfig, port: int, log_dir: Path) -> list[str]:
    """The command line of the one client process that emulates all players."""
    return [
        str(cfg.binary),
        "-role", "client",
        "-transport", cfg.transport,
        "-host", cfg.host,
        "-port", str(port),
        "-players", str(cfg.players),
        "-first-player", "0",
        "-workload", cfg.workload,
        *_param_flags(cfg.params),
        "-duration", _fmt_number(cfg.duration_s),
        "-log-dir", str(log_dir),
        "-run-id", cfg.run_id,
        "-seed", str(cfg.seed),
        *cfg.extra_client_flags,
    ]  # fmt: skip


def run_local(cfg: RunConfig) -> LocalRunResult:
    """Carry out one run; raises LocalRunError when it cannot start, else returns the result.

    A client that fails (non-zero exit, no CONNECTED line) yields a result with `error` set.
    """
    if not cfg.binary.is_file() or not os.access(cfg.binary, os.X_OK):
        raise LocalRunError(
            f"prototype binary {cfg.binary} is missing or not executable; build it with "
            "`cd prototypes/reference && go build -o bin/netstick-ref ./cmd/netstick-ref`"
        )
    for cpu in (cfg.pin_server_cpu, cfg.pin_client_cpu):
        if cpu is not None and cpu not in os.sched_getaffinity(0):
            raise LocalRunError(
                f"cannot pin to CPU {cpu}: allowed CPUs are {sorted(os.sched_getaffinity(0))}"
            )
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    log_dir = cfg.run_dir / "logs"
    port = cfg.port if cfg.port is not None else pick_free_port(cfg.host)
    result = LocalRunResult(
        transport=cfg.transport,
        players=cfg.players,
        duration_s=cfg.duration_s,
        warmup_s=cfg.warmup_s,
        workload=cfg.workload,
        params=dict(cfg.params),
        port=port,
        run_dir=str(cfg.run_dir),
        server_argv=server_argv(cfg, port, log_dir),
        client_argv=client_argv(cfg, port, log_dir),
    )
    children: list[Child] = []
    sampler: Sampler | None = None
    connected_ns: int | None = None
    try:
        server = spawn("server", result.server_argv, cfg.run_dir, cpu=cfg.pin_server_cpu)
        children.append(server)
        if server.watcher.wait_for(READY_PREFIX, cfg.ready_timeout_s) is None:
            code = server.popen.poll()
            what = (
                f"did not print '{READY_PREFIX} ...' within {cfg.ready_timeout_s:g} s"
                if code is None
                else f"exited with code {code} before printing '{READY_PREFIX} ...'"
            )
            raise LocalRunError(
                f"{cfg.transport} server {what}; command: {' '.join(result.server_argv)}"
                f"\nserver stderr (last lines):\n{tail(server.stderr_path)}"
            )
        if not (server.watcher.first_line or "").startswith(READY_PREFIX):
            # CONTRACT.md section 2: nothing goes to stdout before the READY line.
            result.contract_violations.append(
                f"server stdout: {server.watcher.first_line!r} was printed before the READY line"
            )
        client = spawn(CLIENT_PROC, result.client_argv, cfg.run_dir, cpu=cfg.pin_client_cpu)
        children.append(client)
        if cfg.pin_server_cpu is not None or cfg.pin_client_cpu is not None:
            result.pinned_cpus = {c.name: affinity(c) for c in children}
        sampler = Sampler(
            {"server": server.popen.pid, CLIENT_PROC: client.popen.pid},
            cfg.run_dir / "monitor.csv",
            cfg.sample_interval_s,
        ).start()
        try:
            result.client_exit_code = client.popen.wait(
                timeout=cfg.duration_s + CLIENT_EXIT_SLACK_S
            )
        except subprocess.TimeoutExpired:
            result.error = (
                f"client did not exit within duration + {CLIENT_EXIT_SLACK_S:g} s "
                f"= {cfg.duration_s + CLIENT_EXIT_SLACK_S:g} s; killed"
            )
            signal_group(client, signal.SIGKILL)
            result.client_exit_code = client.popen.wait()
        result.server_exit_code = terminate(server)
        try:
            result.sampler_cpu_s = sampler.stop().thread_cpu_s
        except RuntimeError as exc:  # the run itself is still worth reporting
            result.error = result.error or str(exc)

        connected = client.watcher.wait_for(CONNECTED_PREFIX, 2.0)  # stdout is at EOF soon
        if connected is not None:
            connected_ns, line = connected
            fields = parse_netstick_line(line)
            result.connect_s = _float_or_none(fields.get("connect_s"))
            result.players_connected = _int_or_none(fields.get("players"))
        if result.error is None and result.client_exit_code != 0:
            result.error = (
                f"client exited with code {result.client_exit_code}; stderr (last "
                f"lines):\n{tail(client.stderr_path)}"
            )
        elif result.error is None and connected is None:
            result.error = f"client printed no '{CONNECTED_PREFIX} ...' line"
        if result.error is None and result.server_exit_code != 0:
            result.error = (
                f"server exited with code {result.server_exit_code} after SIGTERM; "
                f"stderr (last lines):\n{tail(server.stderr_path)}"
            )
    finally:
        for child in children:
            signal_group(child, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(timeout=5)
            child.watcher.join()
        if sampler is not None and sampler.cost is None:
            with contextlib.suppress(RuntimeError):
                sampler.stop()

    _summarize(cfg, result, log_dir, sampler, connected_ns)
    return result


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _summarize(
    cfg: RunConfig,
    result: LocalRunResult,
    log_dir: Path,
    sampler: Sampler | None,
    connected_ns: int | None,
) -> None:
    if connected_ns is not None:
        result.window_start_unix_ns = connected_ns + int(cfg.warmup_s * 1e9)
        result.window_end_unix_ns = connected_ns + int(cfg.duration_s * 1e9)
    ws, we = result.window_start_unix_ns, result.window_end_unix_ns

    rtt_path = log_dir / f"{CLIENT_PROC}.rtt.csv"
    if ws is not None and rtt_path.is_file():
        try:
            rtt = read_rtt_csv(rtt_path)
        except ValueError as exc:
            result.error = result.error or str(exc)
        else:
            net = summarize_by_kind(
                rtt.t_unix_ns, rtt.kind, rtt.rtt_us, rtt.send_late_us, ws, we, kinds=("net",)
            ).get("net")
            if net is not None:
                result.rtt_samples = net.rtt_us.n
                result.rtt_p50_us = net.rtt_us.p50
                result.rtt_p95_us = net.rtt_us.p95
                result.rtt_p99_us = net.rtt_us.p99
                result.rtt_max_us = net.rtt_us.max
                if net.send_late_us is not None:
                    result.send_late_p99_us = net.send_late_us.p99

    if sampler is not None:
        samples = sampler.samples()
        result.server_cpu_cores = mean_cpu_cores(samples, "server", ws, we)
        result.client_cpu_cores = mean_cpu_cores(samples, CLIENT_PROC, ws, we)
        result.server_rss_bytes = peak_rss_bytes(samples, "server")
        result.client_rss_bytes = peak_rss_bytes(samples, CLIENT_PROC)

    events_path = log_dir / f"{CLIENT_PROC}.events.csv"
    if events_path.is_file():
        with contextlib.suppress(ValueError):
            result.probe_loss_ratio = probe_loss_ratio(read_events_csv(events_path))
    ticks_path = log_dir / "server.ticks.csv"
    if ticks_path.is_file():
        with contextlib.suppress(ValueError):
            counts = [
                int(r["players_connected"])
                for r in read_ticks_csv(ticks_path)
                if r["players_connected"].isdigit()
            ]
            result.server_players_max = max(counts, default=None)
    if cfg.check_logs and log_dir.is_dir():
        result.contract_violations += [str(v) for v in check_log_dir(log_dir, max_per_file=5)]


def probe_loss_ratio(events: list[dict[str, str]], kind: str = "net") -> float | None:
    """Lost / sent over all players' `probes` events of one kind; None without such events.

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
