"""Conformance of a running prototype to prototypes/CONTRACT.md (sections 1-3), from its manifest.

`check_prototype(manifest, transport)` starts the prototype's real server and client processes on
loopback in short scenarios and reports every contract violation it sees, in plain words, as one
CheckResult per check (CHECKS): the READY line, short runs whose logs must pass
prototypes.contract.checklogs.check_log_dir, SIGTERM and SIGKILL behaviour, and the exit codes for bad
arguments, a missing server, a busy port and a server lost mid-run. A check collects all of its
violations, not only the first, and a failing scenario does not stop the others.

Scenarios (each feeds several checks; `only` runs just those its checks need):
    run-<workload>  server + 5 players in 2 client processes for a few seconds, then SIGTERM
    sigterm-client  server + a client that is SIGTERMed mid-run; a second server on the same port
    server-lost     server + a client; the server is SIGKILLed mid-run
    bad-args        unknown flag and unknown workload, for both roles
    no-server       a client whose server does not exist

Processes are started with workflow.cli.bench.localrun's helpers (each in its own process group) and every
group is killed in a finally block, so no check leaves a process behind.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.columns import SCHEMA_VERSION
from prototypes.contract.logs import read_events_csv, read_rtt_csv
from prototypes.contract.manifest import (
    Manifest,
    client_argvs,
    optional_flag_args,
    process_env,
    server_argv,
)
from prototypes.contract.processes import (
    CONNECTED_PREFIX,
    LOOPBACK,
    READY_PREFIX,
    Child,
    pick_free_port,
    signal_group,
    spawn,
    tail,
)

# check name -> what it verifies (the order of the report).
CHECKS: dict[str, str] = {
    "ready-line": "server prints one READY line in the contract's format, nothing before it",
    "port-in-use": "a second server on a busy port exits 3 without READY",
    "run-stream": "stream workload, 5 players in 2 client processes: exit 0, CONNECTED, check-logs",
    "run-idle": "idle workload, 5 players in 2 client processes: exit 0, CONNECTED, check-logs",
    "rtt-kinds": "rtt.csv has rows of kinds net and app for every player",
    "probes-events": "a probes event per player and kind (net, app) at exit",
    "sigterm-server": "SIGTERM: server exits 0 within 2 s, meta.json exited, whole lines",
    "sigterm-client": "SIGTERM: client exits 0 within 2 s, meta.json exited, whole lines",
    "bad-flag": "unknown flag: exit 2, flag named on stderr, nothing on stdout",
    "unknown-workload": "unknown workload: exit 2, workload named on stderr, nothing on stdout",
    "no-server": "client without a server: exit 4 within -connect-timeout-s",
    "server-lost": "server SIGKILLed mid-run: client exits 5, logs hold whole lines",
}
# The scenario that produces each check (others may add observations too).
_SCENARIO_OF = {
    "ready-line": "sigterm-client",
    "port-in-use": "sigterm-client",
    "sigterm-client": "sigterm-client",
    "sigterm-server": "sigterm-client",
    "run-stream": "run",
    "run-idle": "run",
    "rtt-kinds": "run",
    "probes-events": "run",
    "bad-flag": "bad-args",
    "unknown-workload": "bad-args",
    "no-server": "no-server",
    "server-lost": "server-lost",
}
_SCENARIOS = ("run", "sigterm-client", "server-lost", "bad-args", "no-server")

STOP_LIMIT_S = 2.0  # CONTRACT.md section 2: exit within 2 s of SIGTERM
# Our own delay between the process exiting and wait() returning, on a busy 2-core machine.
STOP_TOLERANCE_S = 0.3
RUN_PLAYERS = 5
RUN_PER_PROCESS = 3  # 5 players -> processes of 3 and 2: exercises -first-player and naming
RUN_DURATION_S = 3.0
QUICK_DURATION_S = 2.0
STREAM_PARAMS = {"size": "100", "rate": "20"}  # light: the check is about form, not load
CONNECT_WAIT_S = 15.0  # for the CONNECTED line of a few players
CLIENT_EXIT_SLACK_S = 15.0  # beyond duration: connects, the 1 s probe drain, log flush
SETTLE_S = 1.0  # run time before a signal, so logs hold rows and one 0.5 s flush happened
CONNECT_TIMEOUT_S = 1.0  # -connect-timeout-s of the no-server and bad-args clients, where declared
CONTRACT_CONNECT_TIMEOUT_S = 10.0  # its default, for prototypes without the flag
EXIT_SLACK_S = 3.0  # beyond a timeout the contract or manifest states
BAD_ARGS_WAIT_S = 5.0  # bad arguments should be refused at once
BAD_FLAG = "-netstick-no-such-flag"
BAD_WORKLOAD = "netstick-no-such-workload"
RUN_ID = "conformance"

_READY_RE = re.compile(
    r"NETSTICK READY role=(?P<role>\S+) transport=(?P<transport>\S+) "
    r"addr=(?P<host>\S+):(?P<port>[0-9]+) pid=(?P<pid>[0-9]+) schema=(?P<schema>[0-9]+)"
)
_CONNECTED_RE = re.compile(
    r"NETSTICK CONNECTED players=(?P<players>[0-9]+) first=(?P<first>[0-9]+) "
    r"connect_s=(?P<connect_s>[0-9]+(?:\.[0-9]+)?)"
)
_READY_FORMAT = "NETSTICK READY role=server transport=<name> addr=<host:port> pid=<pid> schema=1"


class ConformanceError(RuntimeError):
    """The checks cannot start (executable missing, unknown transport)."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """Outcome of one check: status pass, fail or skip; every violation in plain words."""

    name: str
    status: str
    summary: str
    violations: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status != "fail"


def _code_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code == -signal.SIGTERM:
        return "was killed by SIGTERM (no handler)"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _stderr(child: Child, lines: int = 3) -> str:
    """The last lines of a child's stderr on one line, so the report stays one line per finding."""
    text = " | ".join(ln.strip() for ln in tail(child.stderr_path, lines).split("\n") if ln.strip())
    return text if len(text) <= 300 else "..." + text[-297:]


def _last_line(text: str) -> str:
    return text.strip().split("\n")[-1][:200] if text.strip() else "(nothing)"


def _first_line(text: str) -> str:
    return text.strip().split("\n")[0][:200] if text.strip() else "(nothing)"


class _Session:
    """State of one check_prototype call: findings per check and every process started."""

    def __init__(self, man: Manifest, transport: str, work_dir: Path, duration_s: float) -> None:
        self.man = man
        self.transport = transport
        self.work_dir = work_dir
        self.duration_s = duration_s
        self.env = process_env(man, os.environ)
        self.violations: dict[str, list[str]] = defaultdict(list)
        self.notes: dict[str, list[str]] = defaultdict(list)
        self.ran: set[str] = set()
        self.skips: dict[str, str] = {}
        self.children: list[Child] = []

    # -- findings --

    def fail(self, check: str, text: str) -> None:
        self.ran.add(check)
        if text not in self.violations[check]:  # the same flaw seen by two scenarios
            self.violations[check].append(text)

    def ok(self, check: str, note: str = "") -> None:
        self.ran.add(check)
        if note:
            self.notes[check].append(note)

    def skip(self, check: str, reason: str) -> None:
        self.skips.setdefault(check, reason)

    # -- processes --

    def spawn(self, name: str, argv: list[str], run_dir: Path) -> Child:
        run_dir.mkdir(parents=True, exist_ok=True)
        child = spawn(name, argv, run_dir, env=self.env)
        self.children.append(child)
        return child

    def kill_all(self) -> None:
        for child in self.children:
            signal_group(child, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(timeout=5)
            child.watcher.join()

    def cell(self, workload: str, **more: Any) -> dict[str, Any]:
        return {"transport": self.transport, "workload": workload, "run_id": RUN_ID, "seed": 1,
                "params": {}, **more}  # fmt: skip

    def client_flags(self, **values: object) -> list[str]:
        return optional_flag_args(self.man, {k.replace("_", "-"): v for k, v in values.items()})


def _wait(child: Child, timeout_s: float) -> tuple[int | None, float]:
    """(exit code or None if still running, seconds waited)."""
    t0 = time.monotonic()
    try:
        code = child.popen.wait(timeout=max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - t0


def _stdout(child: Child) -> str:
    """Everything the child wrote to stdout (after it exited)."""
    child.watcher.join()
    path = child.stderr_path.with_name(f"{child.name}.stdout.log")  # localrun's naming
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _meta_problems(log_dir: Path, proc: str, code: int | None) -> list[str]:
    """meta.json must say status exited with the exit code the process really returned."""
    path = log_dir / f"{proc}.meta.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [f"{path.name} is missing (written when the process starts)"]
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [f"{path.name} is not valid JSON after the process exited ({exc})"]
    if not isinstance(meta, dict):
        return [f"{path.name} is not a JSON object"]
    problems = []
    if meta.get("status") != "exited":
        problems.append(
            f"{path.name} has status {meta.get('status')!r} after the process exited; expected "
            '"exited" (meta.json is rewritten at exit)'
        )
    elif code is not None and code >= 0 and meta.get("exit_code") != code:
        problems.append(
            f"{path.name} says exit_code {meta.get('exit_code')!r} but the process "
            f"{_code_text(code)}"
        )
    return problems


def _log_violations(log_dir: Path, prefix: str | None = None) -> list[str]:
    """check-logs violations of a log directory, optionally only of files starting with prefix."""
    return [
        f"check-logs: {v}"
        for v in check_log_dir(log_dir, max_per_file=10)
        if prefix is None or v.file.startswith(prefix) or v.file == "."
    ]


# -- server start and stop --------------------------------------------------------------------


def _start_server(s: _Session, run_dir: Path, port: int, workload: str = "idle",
                  params: Mapping[str, str] | None = None) -> Child | None:  # fmt: skip
    """Start a server, wait for READY and check the line; None if it never became ready."""
    cell = s.cell(workload, params=dict(params or {}))
    argv = server_argv(s.man, cell, host=LOOPBACK, port=port, log_dir=run_dir / "logs")
    child = s.spawn("server", argv, run_dir)
    t0 = time.monotonic()
    ready = child.watcher.wait_for(READY_PREFIX, s.man.ready_timeout_s)
    if ready is None:
        code = child.popen.poll()
        what = (
            f"printed no {READY_PREFIX} line within ready_timeout_s = {s.man.ready_timeout_s:g} s"
            if code is None
            else f"{_code_text(code)} before printing {READY_PREFIX}"
        )
        s.fail("ready-line", f"server {what}; stderr: {_stderr(child, 5)}")
        return None
    line = ready[1]
    problems = []
    first = child.watcher.first_line
    if first is not None and not first.startswith(READY_PREFIX):
        problems.append(
            f"stdout had {first!r} before the READY line; nothing may precede it "
            "(diagnostics go to stderr)"
        )
    m = _READY_RE.fullmatch(line)
    if m is None:
        problems.append(f"READY line {line!r} does not have the form {_READY_FORMAT!r}")
    else:
        if m["role"] != "server":
            problems.append(f"READY line says role={m['role']}, expected role=server")
        if m["transport"] != s.transport:
            problems.append(f"READY line says transport={m['transport']}, expected {s.transport}")
        if int(m["port"]) != port:
            problems.append(f"READY line says port {m['port']}, but -port was {port}")
        if m["host"] not in (LOOPBACK, "0.0.0.0", "localhost"):
            problems.append(f"READY line says host {m['host']}, but -host was {LOOPBACK}")
        if not _is_server_pid(int(m["pid"]), child):
            problems.append(
                f"READY line says pid={m['pid']}, which is not the server process "
                f"({child.popen.pid}) nor in its process group"
            )
        if int(m["schema"]) != SCHEMA_VERSION:
            problems.append(f"READY line says schema={m['schema']}, expected {SCHEMA_VERSION}")
    for p in problems:
        s.fail("ready-line", p)
    if not problems:
        s.ok("ready-line", f"READY after {time.monotonic() - t0:.2f} s: {line}")
    return child


def _is_server_pid(pid: int, child: Child) -> bool:
    if pid == child.popen.pid:
        return True
    try:  # a launcher may run the server as a child in the same process group
        return os.getpgid(pid) == child.popen.pid
    except OSError:
        return False


def _stop_server(s: _Session, child: Child, run_dir: Path) -> None:
    """SIGTERM the server: exit 0 within 2 s, meta.json exited, only the READY line on stdout."""
    code = child.popen.poll()
    if code is not None:
        s.fail("sigterm-server", f"server {_code_text(code)} before it was sent SIGTERM")
    else:
        signal_group(child, signal.SIGTERM)
        code, waited = _wait(child, STOP_LIMIT_S + STOP_TOLERANCE_S)
        if code is None:
            s.fail("sigterm-server", f"server did not exit within {STOP_LIMIT_S:g} s of SIGTERM")
            signal_group(child, signal.SIGKILL)
            child.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                "sigterm-server",
                f"server {_code_text(code)}, expected to exit 0 after SIGTERM; stderr: "
                f"{_stderr(child, 3)}",
            )
        else:
            s.ok("sigterm-server", f"server exited 0 {waited:.2f} s after SIGTERM")
        for p in _meta_problems(run_dir / "logs", "server", code):
            s.fail("sigterm-server", p)
    lines = [ln for ln in _stdout(child).split("\n") if ln]
    others = [ln for ln in lines if not ln.startswith(READY_PREFIX)]
    if others or len(lines) > 1:
        s.fail(
            "ready-line",
            f"server stdout has {len(lines)} lines ({(others or lines[1:])[0][:200]!r} besides "
            "READY); the server prints exactly one line to stdout",
        )


def _await_connected(child: Child, players: int, first: int) -> tuple[bool, list[str]]:
    """Wait for the client's CONNECTED line; (seen, problems with it)."""
    got = child.watcher.wait_for(CONNECTED_PREFIX, CONNECT_WAIT_S)
    if got is None:
        code = child.popen.poll()
        why = f"within {CONNECT_WAIT_S:g} s" if code is None else f"before it {_code_text(code)}"
        return False, [
            f"{child.name} printed no {CONNECTED_PREFIX} line {why}; stderr: {_stderr(child, 3)}"
        ]
    return True, _connected_problems(child.name, got[1], players, first)


def _connected_problems(name: str, line: str, players: int, first: int) -> list[str]:
    m = _CONNECTED_RE.fullmatch(line)
    if m is None:
        return [
            f"{name}: {line!r} does not have the form 'NETSTICK CONNECTED players=<n> "
            "first=<k> connect_s=<seconds>'"
        ]
    problems = []
    if int(m["players"]) != players or int(m["first"]) != first:
        problems.append(
            f"{name}: CONNECTED line says players={m['players']} first={m['first']}, expected "
            f"players={players} first={first}"
        )
    return problems


# -- scenarios --------------------------------------------------------------------------------


def _scenario_run(s: _Session, workload: str) -> None:
    check = f"run-{workload}"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    params = STREAM_PARAMS if workload == "stream" else {}
    port = pick_free_port()
    server = _start_server(s, run_dir, port, workload, params)
    if server is None:
        s.fail(check, "not run: the server did not become ready (see ready-line)")
        for c in ("rtt-kinds", "probes-events"):
            s.skip(c, "the server did not become ready")
        return
    cell = s.cell(workload, params=dict(params), players=RUN_PLAYERS, duration_s=s.duration_s)
    argvs = client_argvs(
        s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir,
        players_per_process=min(RUN_PER_PROCESS, s.man.players_per_process),
    )  # fmt: skip
    clients = []  # (child, first player, players)
    for argv in argvs:
        first, count = _flag_int(argv, "-first-player"), _flag_int(argv, "-players")
        clients.append((s.spawn(f"client-{first}", argv, run_dir), first, count))
    deadline = time.monotonic() + s.duration_s + CLIENT_EXIT_SLACK_S
    codes: dict[str, int | None] = {}
    for child, first, count in clients:
        code, _ = _wait(child, deadline - time.monotonic())
        codes[child.name] = code
        if code is None:
            s.fail(
                check,
                f"{child.name} still running {s.duration_s + CLIENT_EXIT_SLACK_S:g} s after its "
                f"start with -duration {s.duration_s:g}; killed",
            )
            signal_group(child, signal.SIGKILL)
            child.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                check,
                f"{child.name} {_code_text(code)}, expected 0 after its duration; stderr: "
                f"{_stderr(child, 3)}",
            )
        got = child.watcher.wait_for(CONNECTED_PREFIX, 1.0)
        if got is None:
            s.fail(check, f"{child.name} printed no {CONNECTED_PREFIX} line")
        else:
            for p in _connected_problems(child.name, got[1], count, first):
                s.fail(check, p)
        for p in _meta_problems(log_dir, child.name, code):
            s.fail(check, p)
    _stop_server(s, server, run_dir)
    for v in _log_violations(log_dir):
        s.fail(check, v)
    if not s.violations.get(check):
        s.ok(check, f"{len(clients)} client processes exited 0, logs conform")
    _check_rtt_kinds(s, log_dir, workload, clients)
    _check_probes_events(s, log_dir, workload, clients)


def _flag_int(argv: list[str], flag: str) -> int:
    for a, b in itertools.pairwise(argv):
        if a == flag:
            return int(b)
    raise ConformanceError(f"manifest's client_command renders no {flag} <n>: {argv}")


def _players_text(players: list[int]) -> str:
    return ", ".join(map(str, players[:10])) + (
        f" and {len(players) - 10} more" if len(players) > 10 else ""
    )


def _check_rtt_kinds(s: _Session, log_dir: Path, workload: str,
                     clients: list[tuple[Child, int, int]]) -> None:  # fmt: skip
    for child, first, count in clients:
        path = log_dir / f"{child.name}.rtt.csv"
        try:
            rtt = read_rtt_csv(path)
        except (OSError, ValueError) as exc:
            s.fail("rtt-kinds", f"{workload}: cannot read {path.name}: {exc}")
            continue
        for kind in ("net", "app"):
            have = {int(p) for p in rtt.player[rtt.kind == kind]}
            missing = [p for p in range(first, first + count) if p not in have]
            if missing:
                s.fail(
                    "rtt-kinds",
                    f"{workload}: {path.name} has no rows of kind {kind} for player(s) "
                    f"{_players_text(missing)} (probes at the default -probe-hz 10 for "
                    f"{s.duration_s:g} s)",
                )
    if "rtt-kinds" not in s.violations:
        s.ok("rtt-kinds", "net and app rows for every player")


def _check_probes_events(s: _Session, log_dir: Path, workload: str,
                         clients: list[tuple[Child, int, int]]) -> None:  # fmt: skip
    for child, first, count in clients:
        path = log_dir / f"{child.name}.events.csv"
        try:
            rows = read_events_csv(path)
        except (OSError, ValueError) as exc:
            s.fail("probes-events", f"{workload}: cannot read {path.name}: {exc}")
            continue
        seen: dict[tuple[int, str], int] = defaultdict(int)
        for row in rows:
            if row["event"] == "probes" and row["player"].isdigit():
                kind = dict(w.partition("=")[::2] for w in row["detail"].split()).get("kind", "")
                seen[(int(row["player"]), kind)] += 1
        for kind in ("net", "app"):
            players = range(first, first + count)
            missing = [p for p in players if seen[(p, kind)] == 0]
            repeated = [p for p in players if seen[(p, kind)] > 1]
            if missing:
                s.fail(
                    "probes-events",
                    f"{workload}: {path.name} has no probes event with kind={kind} for "
                    f"player(s) {_players_text(missing)}; one is written per player and kind "
                    "at exit",
                )
            if repeated:
                s.fail(
                    "probes-events",
                    f"{workload}: {path.name} has several probes events with kind={kind} for "
                    f"player(s) {_players_text(repeated)}; expected one at exit",
                )
    if "probes-events" not in s.violations:
        s.ok("probes-events", "one per player and kind")


def _scenario_sigterm_client(s: _Session) -> None:
    run_dir = s.work_dir / "sigterm-client"
    log_dir = run_dir / "logs"
    port = pick_free_port()
    server = _start_server(s, run_dir, port)
    if server is None:
        for c in ("sigterm-client", "port-in-use", "sigterm-server"):
            s.skip(c, "the server did not become ready (see ready-line)")
        return
    _check_port_in_use(s, run_dir, port)
    cell = s.cell("idle", players=2, duration_s=60)
    (argv,) = client_argvs(s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir)
    client = s.spawn("client-0", argv, run_dir)
    connected, problems = _await_connected(client, 2, 0)
    if not connected:
        for p in problems:
            s.fail("sigterm-client", f"not run: {p}")
    else:
        time.sleep(SETTLE_S)
        signal_group(client, signal.SIGTERM)
        code, waited = _wait(client, STOP_LIMIT_S + STOP_TOLERANCE_S)
        if code is None:
            s.fail("sigterm-client", f"client did not exit within {STOP_LIMIT_S:g} s of SIGTERM")
            signal_group(client, signal.SIGKILL)
            client.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                "sigterm-client",
                f"client {_code_text(code)}, expected to exit 0 after SIGTERM; stderr: "
                f"{_stderr(client, 3)}",
            )
        else:
            s.ok("sigterm-client", f"client exited 0 {waited:.2f} s after SIGTERM")
        for p in _meta_problems(log_dir, "client-0", code):
            s.fail("sigterm-client", p)
        for v in _log_violations(log_dir, "client-"):
            s.fail("sigterm-client", f"after SIGTERM: {v}")
    _stop_server(s, server, run_dir)
    for v in _log_violations(log_dir, "server"):
        s.fail("sigterm-server", f"after SIGTERM: {v}")


def _check_port_in_use(s: _Session, run_dir: Path, port: int) -> None:
    """A second server on the port of a running one must exit 3 (could not bind)."""
    second_dir = run_dir / "second-server"
    argv = server_argv(s.man, s.cell("idle"), host=LOOPBACK, port=port, log_dir=second_dir / "logs")
    child = s.spawn("server", argv, second_dir)
    ready = child.watcher.wait_for(READY_PREFIX, s.man.ready_timeout_s)
    code, _ = _wait(child, 0 if ready else 1.0)
    if ready is not None:
        s.fail(
            "port-in-use",
            f"a second server printed READY although port {port} is taken by the first one; "
            "expected exit code 3 (could not bind)",
        )
    elif code is None:
        s.fail(
            "port-in-use",
            f"a second server on the busy port {port} neither exited nor printed READY "
            f"within {s.man.ready_timeout_s:g} s; expected exit code 3",
        )
    elif code != 3:
        s.fail(
            "port-in-use",
            f"a second server on the busy port {port} {_code_text(code)}, expected 3; stderr: "
            f"{_stderr(child, 3)}",
        )
    else:
        s.ok("port-in-use", "second server exited 3")
    if code is None:
        signal_group(child, signal.SIGKILL)
        child.popen.wait(timeout=5)


def _scenario_server_lost(s: _Session) -> None:
    check = "server-lost"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    port = pick_free_port()
    server = _start_server(s, run_dir, port)
    if server is None:
        s.skip(check, "the server did not become ready (see ready-line)")
        return
    (argv,) = client_argvs(
        s.man, s.cell("idle", players=2, duration_s=60), host=LOOPBACK, port=port, log_dir=log_dir
    )
    client = s.spawn("client-0", argv, run_dir)
    connected, problems = _await_connected(client, 2, 0)
    if not connected:
        for p in problems:
            s.fail(check, f"not run: {p}")
        return
    time.sleep(SETTLE_S / 2)
    signal_group(server, signal.SIGKILL)
    server.popen.wait(timeout=5)
    limit_s = s.man.transport(s.transport).server_lost_s
    code, waited = _wait(client, limit_s + EXIT_SLACK_S)
    if code is None:
        s.fail(
            check,
            f"client still running {limit_s + EXIT_SLACK_S:g} s after its server was killed "
            f"(manifest server_lost_s {limit_s:g} + {EXIT_SLACK_S:g} s); expected exit code 5",
        )
        signal_group(client, signal.SIGKILL)
        client.popen.wait(timeout=5)
    elif code != 5:
        s.fail(
            check,
            f"client {_code_text(code)} after its server was killed, expected 5 (connection "
            f"lost); stderr: {_stderr(client, 3)}",
        )
    else:
        s.ok(check, f"client exited 5 {waited:.2f} s after the server was killed")
    for p in _meta_problems(log_dir, "client-0", code):
        s.fail(check, p)
    events = log_dir / "client-0.events.csv"
    with contextlib.suppress(OSError, ValueError):
        if code == 5 and not any(r["event"] == "server_lost" for r in read_events_csv(events)):
            s.fail(check, f"{events.name} has no server_lost event after the server was lost")
    for v in _log_violations(log_dir):
        s.fail(check, f"after SIGKILL of the server: {v}")


def _expect_usage_error(s: _Session, check: str, role: str, argv: list[str], run_dir: Path,
                        named: tuple[str, ...], what: str) -> None:  # fmt: skip
    """The process must exit 2 at once, name the culprit on stderr and print nothing."""
    child = s.spawn(role, argv, run_dir)
    deadline = time.monotonic() + BAD_ARGS_WAIT_S
    started = None
    while time.monotonic() < deadline and child.popen.poll() is None:
        started = child.watcher.wait_for("NETSTICK ", 0.05)
        if started is not None:
            break
    code = child.popen.poll()
    if code is None:
        signal_group(child, signal.SIGKILL)
        child.popen.wait(timeout=5)
    problems = []
    if started is not None:
        problems.append(f"{role} accepted {what} and started (printed {started[1]!r})")
    elif code is None:
        problems.append(f"{role} was still running {BAD_ARGS_WAIT_S:g} s after {what}")
    elif code != 2:
        problems.append(f"{role} {_code_text(code)} for {what}, expected 2 (bad arguments)")
    stdout = _stdout(child)
    if stdout.strip() and started is None:
        problems.append(
            f"{role} wrote {_first_line(stdout)!r} to stdout for {what}; expected nothing"
        )
    try:
        stderr = child.stderr_path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        stderr = ""
    if started is None and not any(n in stderr for n in named):
        problems.append(
            f"{role}'s stderr does not name {named[0]!r} for {what}: {_last_line(stderr)!r}"
        )
    for p in problems:
        s.fail(check, p)
    if not problems:
        s.ok(check, f"{role}: exit 2, {_last_line(stderr)[:80]!r}")


def _scenario_bad_args(s: _Session) -> None:
    base = s.work_dir / "bad-args"
    workload = s.man.workloads[0]
    for role in ("server", "client"):
        port = pick_free_port()  # nothing listens: a client that ignores the flag cannot connect
        for check, cell, flag_args, named, what in (
            ("bad-flag", s.cell(workload), [BAD_FLAG, "1"], (BAD_FLAG, BAD_FLAG[1:]),
             f"the unknown flag {BAD_FLAG}"),
            ("unknown-workload", s.cell(BAD_WORKLOAD), [], (BAD_WORKLOAD,),
             f"-workload {BAD_WORKLOAD}"),
        ):  # fmt: skip
            run_dir = base / f"{check}-{role}"
            log_dir = run_dir / "logs"
            if role == "server":
                cell["extra_server_flags"] = flag_args
                argv = server_argv(
                    s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir, check=False
                )
            else:
                cell["extra_client_flags"] = [
                    *flag_args,
                    *s.client_flags(connect_timeout_s=CONNECT_TIMEOUT_S),
                ]
                (argv,) = client_argvs(
                    s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir, check=False
                )
            _expect_usage_error(s, check, role, argv, run_dir, named, what)


def _scenario_no_server(s: _Session) -> None:
    check = "no-server"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    port = pick_free_port()  # free now, and nothing of ours will listen on it
    flags = s.client_flags(connect_timeout_s=CONNECT_TIMEOUT_S)
    timeout_s = CONNECT_TIMEOUT_S if flags else CONTRACT_CONNECT_TIMEOUT_S
    cell = s.cell("idle", players=1, duration_s=5, extra_client_flags=flags)
    (argv,) = client_argvs(s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir)
    client = s.spawn("client-0", argv, run_dir)
    code, waited = _wait(client, timeout_s + EXIT_SLACK_S)
    if code is None:
        s.fail(
            check,
            f"client without a server still running {timeout_s + EXIT_SLACK_S:g} s after start "
            f"(connect timeout {timeout_s:g} s); expected exit code 4",
        )
        signal_group(client, signal.SIGKILL)
        client.popen.wait(timeout=5)
    elif code != 4:
        s.fail(
            check,
            f"client without a server {_code_text(code)}, expected 4 (could not connect); "
            f"stderr: {_stderr(client, 3)}",
        )
    else:
        s.ok(check, f"exit 4 after {waited:.2f} s (connect timeout {timeout_s:g} s)")
    if CONNECTED_PREFIX in _stdout(client):
        s.fail(check, f"client without a server printed {CONNECTED_PREFIX}")
    for p in _meta_problems(log_dir, "client-0", code):
        s.fail(check, p)


# -- entry point ------------------------------------------------------------------------------


def check_prototype(
    man: Manifest,
    transport: str,
    *,
    quick: bool = False,
    work_dir: Path | None = None,
    only: Collection[str] | None = None,
    duration_s: float | None = None,
) -> list[CheckResult]:
    """Run the checks against one transport of a prototype; one result per check in CHECKS.

    quick: one short run (stream, 2 s) instead of stream and idle for 3 s each. work_dir: where
    the logs go (a temporary directory, removed afterwards, when None). only: names of checks to
    run (the scenarios they need run; other checks they feed are reported too).
    """
    man.transport(transport)  # raises for an unknown transport
    if not man.executable.is_file():
        how = (
            f"build it with `{' '.join(man.build_command)}` in {man.directory}"
            if man.build_command
            else "the manifest has no build command"
        )
        raise ConformanceError(
            f"executable {man.executable} ({man.path}: executable) is missing; {how}"
        )
    unknown = sorted(set(only or ()) - set(CHECKS))
    if unknown:
        raise ConformanceError(
            f"unknown check(s) {', '.join(unknown)}; expected {', '.join(CHECKS)}"
        )
    wanted = list(CHECKS) if only is None else [c for c in CHECKS if c in only]
    scenarios = [sc for sc in _SCENARIOS if any(_SCENARIO_OF[c] == sc for c in wanted)]
    workloads = [w for w in ("stream", "idle") if w in man.workloads]
    if quick:
        workloads = workloads[:1]
    if not workloads:
        workloads = [man.workloads[0]]
    duration = (
        duration_s if duration_s is not None else (QUICK_DURATION_S if quick else RUN_DURATION_S)
    )

    own_dir = work_dir is None
    root = Path(tempfile.mkdtemp(prefix="netstick-conformance-")) if own_dir else Path(work_dir)
    root.mkdir(parents=True, exist_ok=True)
    s = _Session(man, transport, root, duration)
    try:
        for scenario in scenarios:
            if scenario == "run":
                for w in workloads:
                    if f"run-{w}" in wanted or any(
                        c in wanted for c in ("rtt-kinds", "probes-events")
                    ):
                        _scenario_run(s, w)
            elif scenario == "sigterm-client":
                _scenario_sigterm_client(s)
            elif scenario == "server-lost":
                _scenario_server_lost(s)
            elif scenario == "bad-args":
                _scenario_bad_args(s)
            elif scenario == "no-server":
                _scenario_no_server(s)
    finally:
        s.kill_all()
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)
    for w in ("stream", "idle"):
        if w not in workloads:
            s.skip(f"run-{w}", "quick mode runs one workload" if w in man.workloads
                   else f"the manifest does not list the {w} workload")  # fmt: skip
    return [_result(s, c) for c in wanted]


def _result(s: _Session, check: str) -> CheckResult:
    if s.violations.get(check):
        v = tuple(s.violations[check])
        return CheckResult(check, "fail", f"{len(v)} violation(s)", v)
    if check in s.ran:
        return CheckResult(check, "pass", (s.notes.get(check) or [CHECKS[check]])[0])
    return CheckResult(check, "skip", s.skips.get(check, "not run"))


def format_table(man: Manifest, transport: str, results: list[CheckResult]) -> str:
    """Plain-text report: one row per check, each violation on its own line below a failure."""
    width = max(len(r.name) for r in results) if results else 10
    lines = [f"{man.name} / {transport}  ({man.path})", f"{'check':<{width}}  result  details"]
    for r in results:
        status = r.status.upper() if r.status == "fail" else r.status
        lines.append(f"{r.name:<{width}}  {status:<6}  {r.summary}")
        lines += [f"{'':<{width}}    - {v}" for v in r.violations]
    failed = sum(r.status == "fail" for r in results)
    passed = sum(r.status == "pass" for r in results)
    skipped = sum(r.status == "skip" for r in results)
    lines.append(f"{passed} passed, {failed} failed, {skipped} skipped")
    return "\n".join(lines)
