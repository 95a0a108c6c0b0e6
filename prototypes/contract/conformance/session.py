"""The checks' vocabulary and one check session: its results, its processes, the server's start
and stop, and the helpers every scenario uses."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prototypes.contract import lines
from prototypes.contract.argv import optional_flag_args, process_env, server_argv
from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.columns import SCHEMA_VERSION
from prototypes.contract.manifest import Manifest
from prototypes.contract.processes import (
    LOOPBACK,
    Child,
    signal_group,
    signals_deferred,
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
    "player-events": "a connect and a world_loaded event per player, whatever the workload",
    "library-versions": "every process records the manifest's library_versions, same versions",
    "sigterm-server": "SIGTERM: server exits 0 within 2 s, meta.json exited, whole lines",
    "sigterm-client": "SIGTERM: client exits 0 within 2 s, meta.json exited, whole lines",
    "duration-zero": "a client with -duration 0 runs until SIGTERM",
    "other-role-flags": "a server given the client's flags (-players, -first-player) ignores them",
    "server-stop": "server SIGTERMed mid-run: its client exits 5 with a server_lost event",
    "bad-flag": "unknown flag: exit 2, flag named on stderr, nothing on stdout",
    "unknown-workload": "unknown or unimplemented workload: exit 2, named on stderr, no stdout",
    "bad-param": "probe size below 18 bytes: exit 2, parameter named on stderr, nothing on stdout",
    "no-server": "client without a server: exit 4 within -connect-timeout-s",
    "server-lost": "server SIGKILLed mid-run: client exits 5, logs hold whole lines",
}
# The scenario that produces each check (others may add observations too).
SCENARIO_OF = {
    "ready-line": "sigterm-client",
    "port-in-use": "sigterm-client",
    "sigterm-client": "sigterm-client",
    "sigterm-server": "sigterm-client",
    "duration-zero": "sigterm-client",
    "other-role-flags": "other-role-flags",
    "run-stream": "run",
    "run-idle": "run",
    "rtt-kinds": "run",
    "probes-events": "run",
    "player-events": "run",
    "library-versions": "run",
    "server-stop": "server-stop",
    "bad-param": "bad-args",
    "bad-flag": "bad-args",
    "unknown-workload": "bad-args",
    "no-server": "no-server",
    "server-lost": "server-lost",
}
SCENARIOS = (
    "run",
    "sigterm-client",
    "server-stop",
    "server-lost",
    "bad-args",
    "no-server",
    "other-role-flags",
)

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


def code_text(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code == -signal.SIGTERM:
        return "was killed by SIGTERM (no handler)"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


def stderr_tail(child: Child, lines: int = 3) -> str:
    """The last lines of a child's stderr on one line, so the report stays one line per finding."""
    text = " | ".join(ln.strip() for ln in tail(child.stderr_path, lines).split("\n") if ln.strip())
    return text if len(text) <= 300 else "..." + text[-297:]


def last_line(text: str) -> str:
    return text.strip().split("\n")[-1][:200] if text.strip() else "(nothing)"


def first_line(text: str) -> str:
    return text.strip().split("\n")[0][:200] if text.strip() else "(nothing)"


class Session:
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
        with signals_deferred():  # a stop between the two would orphan the child
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


def wait_exit(child: Child, timeout_s: float) -> tuple[int | None, float]:
    """(exit code or None if still running, seconds waited)."""
    t0 = time.monotonic()
    try:
        code = child.popen.wait(timeout=max(0.0, timeout_s))
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - t0


def stdout_text(child: Child) -> str:
    """Everything the child wrote to stdout (after it exited)."""
    child.watcher.join()
    path = child.stderr_path.with_name(f"{child.name}.stdout.log")  # spawn's naming
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def meta_problems(log_dir: Path, proc: str, code: int | None) -> list[str]:
    """meta.json must say status exited with the exit code the process really returned. code
    None: the process did not exit and the checker killed it (SIGKILL), which leaves no chance
    to rewrite meta.json; the caller has named that cause, and it is not counted twice."""
    if code is None:
        return []
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
            f"{code_text(code)}"
        )
    return problems


def log_violations(log_dir: Path, prefix: str | None = None) -> list[str]:
    """check-logs violations of a log directory, optionally only of files starting with prefix."""
    return [
        f"check-logs: {v}"
        for v in check_log_dir(log_dir, max_per_file=10)
        if prefix is None or v.file.startswith(prefix) or v.file == "."
    ]


# -- server start and stop --------------------------------------------------------------------


def start_server(s: Session, run_dir: Path, port: int, workload: str = "idle",
                  params: Mapping[str, str] | None = None) -> Child | None:  # fmt: skip
    """Start a server, wait for READY and check the line; None if it never became ready."""
    cell = s.cell(workload, params=dict(params or {}))
    argv = server_argv(s.man, cell, host=LOOPBACK, port=port, log_dir=run_dir / "logs")
    child = s.spawn("server", argv, run_dir)
    t0 = time.monotonic()
    ready = child.watcher.wait_for(lines.READY_PREFIX, s.man.ready_timeout_s)
    if ready is None:
        code = child.popen.poll()
        what = (
            f"printed no {lines.READY_PREFIX} line within "
            f"ready_timeout_s = {s.man.ready_timeout_s:g} s"
            if code is None
            else f"{code_text(code)} before printing {lines.READY_PREFIX}"
        )
        s.fail("ready-line", f"server {what}; stderr: {stderr_tail(child, 5)}")
        return None
    line = ready[1]
    problems = []
    first = child.watcher.first_line
    if first is not None and not first.startswith(lines.READY_PREFIX):
        problems.append(
            f"stdout had {first!r} before the READY line; nothing may precede it "
            "(diagnostics go to stderr)"
        )
    m = lines.READY_RE.fullmatch(line)
    if m is None:
        problems.append(f"READY line {line!r} does not have the form {lines.READY_FORMAT!r}")
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


def stop_server(s: Session, child: Child, run_dir: Path) -> bool:
    """SIGTERM the server: exit 0 within 2 s, meta.json exited, only the READY line on stdout.
    False when it did not stop on SIGTERM (the checker killed it)."""
    code = child.popen.poll()
    if code is not None:
        s.fail("sigterm-server", f"server {code_text(code)} before it was sent SIGTERM")
    else:
        signal_group(child, signal.SIGTERM)
        code, waited = wait_exit(child, STOP_LIMIT_S + STOP_TOLERANCE_S)
        if code is None:
            s.fail("sigterm-server", f"server did not exit within {STOP_LIMIT_S:g} s of SIGTERM")
            signal_group(child, signal.SIGKILL)
            child.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                "sigterm-server",
                f"server {code_text(code)}, expected to exit 0 after SIGTERM; stderr: "
                f"{stderr_tail(child, 3)}",
            )
        else:
            s.ok("sigterm-server", f"server exited 0 {waited:.2f} s after SIGTERM")
        for p in meta_problems(run_dir / "logs", "server", code):
            s.fail("sigterm-server", p)
    out_lines = [ln for ln in stdout_text(child).split("\n") if ln]
    others = [ln for ln in out_lines if not ln.startswith(lines.READY_PREFIX)]
    if others or len(out_lines) > 1:
        s.fail(
            "ready-line",
            f"server stdout has {len(out_lines)} lines "
            f"({(others or out_lines[1:])[0][:200]!r} besides "
            "READY); the server prints exactly one line to stdout",
        )
    return code is not None


def await_connected(child: Child, players: int, first: int) -> tuple[bool, list[str]]:
    """Wait for the client's CONNECTED line; (seen, problems with it)."""
    got = child.watcher.wait_for(lines.CONNECTED_PREFIX, CONNECT_WAIT_S)
    if got is None:
        code = child.popen.poll()
        why = f"within {CONNECT_WAIT_S:g} s" if code is None else f"before it {code_text(code)}"
        return False, [
            f"{child.name} printed no {lines.CONNECTED_PREFIX} line {why}; "
            f"stderr: {stderr_tail(child, 3)}"
        ]
    return True, connected_problems(child.name, got[1], players, first)


def connected_problems(name: str, line: str, players: int, first: int) -> list[str]:
    m = lines.CONNECTED_RE.fullmatch(line)
    if m is None:
        return [f"{name}: {line!r} does not have the form {lines.CONNECTED_FORMAT!r}"]
    problems = []
    if int(m["players"]) != players or int(m["first"]) != first:
        problems.append(
            f"{name}: CONNECTED line says players={m['players']} first={m['first']}, expected "
            f"players={players} first={first}"
        )
    return problems
