"""The conformance checker (prototypes.contract.conformance, `netstick check-prototype`).

tests/python/fake_prototype.py implements only what the harness tests need: its client has no
SIGTERM handler, no app probes, no exit codes 4 and 5, and neither role rejects bad arguments.
This module therefore doubles as a conformant stand-in: run as a script it validates the
arguments like the contract asks, serves with fake_prototype's server unchanged (it echoes probes
with a negative player field in its next tick: the app probes) and plays with `conformant_client`
below. FAKE_CONFORMANCE_BREAK (set through the manifest's `environment`)
breaks one rule at a time, and each broken variant must produce the right violation.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fake_prototype as fp
import psutil
import pytest
import yaml
from conftest import REPO, needs_reference_binary

from monitors.stopsignal import StopSignal
from prototypes.contract import conformance
from prototypes.contract import manifest as mf
from workflow.cli.main import main as cli_main

FAKE_MANIFEST = Path(__file__).with_name("fake-prototype.yaml")
REFERENCE_MANIFEST = REPO / "prototypes" / "reference" / "prototype.yaml"
BREAK = os.environ.get("FAKE_CONFORMANCE_BREAK", "")

# -- the conformant stand-in (runs in the prototype processes) ----------------------------------

FLAGS = frozenset(
    {
        "role", "host", "port", "transport", "players", "first-player", "workload", "param",
        "duration", "tick-rate", "log-dir", "run-id", "seed", "connect-timeout-s",
    }
)  # fmt: skip
WORKLOAD_PARAMS = {"idle": frozenset(), "stream": frozenset({"size", "rate", "channel"})}
PROBE_HEADER_BYTES = 18  # the contract's smallest probe
PROBE_HZ = 10.0
RTT_HEADER = "t_unix_ns,player,seq,rtt_us,kind,send_late_us"


def argument_problem(argv: list[str]) -> str | None:
    """What is wrong with the command line (CONTRACT.md section 1), naming the flag; None if ok."""
    i = 0
    while i < len(argv):
        m = re.fullmatch(r"--?([a-z][a-z-]*)(?:=(.*))?", argv[i])  # --flag is -flag
        if m is None or m.group(1) not in FLAGS:
            return f"unknown flag {argv[i]}"
        if m.group(2) is None and i + 1 >= len(argv):
            return f"flag {argv[i]} needs a value"
        i += 1 if m.group(2) is not None else 2
    flags, params = fp.parse_flags(argv)
    workload = flags.get("workload", "idle")
    if BREAK == "accept-known-workloads" and workload in mf.contract_workloads():
        return None
    if workload not in WORKLOAD_PARAMS:
        return f"-workload {workload!r}: expected one of {', '.join(WORKLOAD_PARAMS)}"
    for key in params:
        if key not in WORKLOAD_PARAMS[workload]:
            return f"-param {key}: not a parameter of workload {workload}"
    size = params.get("size", "400")
    if not size.isdigit() or int(size) < PROBE_HEADER_BYTES:
        return f"-param size={size}: expected bytes >= {PROBE_HEADER_BYTES} (the probe's header)"
    if flags.get("role") not in ("server", "client") or "log-dir" not in flags:
        return "-role server|client and -log-dir are required"
    return None


def conformant_client(flags: dict[str, str], params: dict[str, str]) -> int:
    """Players over fake_prototype's TCP echo, with the contract's probes, signals and exits."""
    first, players = int(flags.get("first-player", "0")), int(flags.get("players", "1"))
    logs = fp.Logs(Path(flags["log-dir"]), f"client-{first}", "client", flags, params)
    rtt = logs._open("rtt", RTT_HEADER)
    stop = StopSignal().install()
    addr = (flags.get("host", "127.0.0.1"), int(flags.get("port", "7777")))
    timeout_s = float(flags.get("connect-timeout-s", "10"))
    socks: list[socket.socket] = []
    t0 = time.monotonic()
    for p in range(first, first + players):
        deadline = time.monotonic() + timeout_s
        while True:
            start = time.monotonic()
            try:
                s = socket.create_connection(addr, timeout=max(0.1, deadline - start))
                break
            except OSError as exc:
                if time.monotonic() >= deadline or stop.is_set():
                    logs.row(logs.events, time.time_ns(), p, "connect_failed", "", f"error={exc}")
                    print(f"fake: player {p} could not connect: {exc}", file=sys.stderr)
                    logs.exit(4, "connect failed")
                    return 4
                stop.wait(0.1)
        s.settimeout(None)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
        ms = (time.monotonic() - start) * 1e3
        logs.row(logs.events, time.time_ns(), p, "connect", f"{ms:.3f}", "")
        if BREAK != "no-world-loaded":  # the world is empty: loaded with the connection
            detail = "objects=0 bytes=0"
            logs.row(logs.events, time.time_ns(), p, "world_loaded", f"{ms:.3f}", detail)
    print(
        f"NETSTICK CONNECTED players={players} first={first} connect_s={time.monotonic() - t0:.4f}",
        flush=True,
    )
    net_hz = float(params.get("rate", "60")) if flags.get("workload") == "stream" else PROBE_HZ
    period = {"net": 1.0 / net_hz, "app": 1.0 / PROBE_HZ}
    due = {"net": time.monotonic(), "app": time.monotonic() + 0.01}
    sent = dict.fromkeys(period, 0)
    duration_s = float(flags.get("duration", "0") or "0")
    end = time.monotonic() + duration_s if duration_s > 0 else float("inf")  # 0: until SIGTERM
    code, reason = 0, "duration elapsed"
    try:
        while not stop.is_set() and time.monotonic() < end:
            kind = min(due, key=lambda k: due[k])
            wait_s = min(due[kind], end) - time.monotonic()
            if wait_s > 0:
                stop.wait(wait_s)
                continue
            late_us = (time.monotonic() - due[kind]) * 1e6
            # Every player's probe goes out before any echo is awaited, so that the app probes
            # of all players wait for the same tick of the server.
            sends = []
            for i, s in enumerate(socks):
                # The fake server echoes a negative player field in its next tick.
                at_tick = kind == "app" and BREAK != "app-echo-at-once"
                field = -(first + i + 1) if at_tick else first + i
                sends.append((time.time_ns(), time.monotonic()))
                s.sendall(fp.PROBE.pack(field, sent[kind]))
            for i, (s, (t_ns, sent_at)) in enumerate(zip(socks, sends, strict=True)):
                fp.recv_exact(s, fp.PROBE.size)
                rtt_us = (time.monotonic() - sent_at) * 1e6
                logs.row(rtt, t_ns, first + i, sent[kind], f"{rtt_us:.1f}", kind, f"{late_us:.1f}")
            sent[kind] += 1
            due[kind] += period[kind]
    except OSError as exc:
        logs.row(logs.events, time.time_ns(), "", "server_lost", "", f"error={type(exc).__name__}")
        print(f"fake: connection to the server lost: {exc}", file=sys.stderr)
        code, reason = 5, "server lost"
    if stop.is_set() and code == 0:
        reason = "sigterm"
        if BREAK == "sigterm-exit-1":
            code = 1
    for i, s in enumerate(socks):
        for kind, n in sent.items():
            if BREAK == "no-app-probes" and kind == "app":
                continue
            detail = f"kind={kind} echoed={n} lost=0 inflight=0"
            logs.row(logs.events, time.time_ns(), first + i, "probes", n, detail)
        s.close()
    logs.exit(code, reason)
    return code


def stand_in_main(argv: list[str]) -> int:
    if BREAK != "ignore-bad-args" and (problem := argument_problem(argv)) is not None:
        print(f"fake: bad arguments: {problem}", file=sys.stderr)
        return 2
    flags, params = fp.parse_flags(argv)
    if flags["role"] == "server":
        return fp.server(flags, params)  # FAKE_PROTOTYPE_MODE=chatty prints before READY
    return conformant_client(flags, params)


# -- tests ---------------------------------------------------------------------------------------


def stand_in(**environment: str) -> mf.Manifest:
    """fake-prototype.yaml, running this module as the conformant stand-in."""
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = Path(__file__).name
    doc["optional_flags"] = ["connect-timeout-s"]
    doc["environment"] = environment
    # What the fake records in its meta.json (the interpreter that runs the tests).
    doc["library_versions"] = {"python": "{}.{}".format(*sys.version_info[:2])}
    return mf.parse(doc, FAKE_MANIFEST)


def results_by_name(results: list[conformance.CheckResult]) -> dict[str, conformance.CheckResult]:
    return {r.name: r for r in results}


def our_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.is_running()]


def test_stand_in_passes_every_check(tmp_path: Path) -> None:
    results = conformance.check_prototype(
        stand_in(), "tcp", work_dir=tmp_path / "work", duration_s=1.5
    )
    failed = [(r.name, r.violations) for r in results if r.status != "pass"]
    assert failed == []
    assert [r.name for r in results] == list(conformance.CHECKS)
    assert our_children() == []
    # two client processes (3 + 2 players) per run, named by their first player
    logs = tmp_path / "work" / "run-idle" / "logs"
    assert sorted(p.name for p in logs.glob("client-*.meta.json")) == [
        "client-0.meta.json",
        "client-3.meta.json",
    ]


@pytest.mark.parametrize(
    ("environment", "only", "check", "expected"),
    [
        (
            {"FAKE_PROTOTYPE_MODE": "chatty"},
            ["ready-line"],
            "ready-line",
            [
                "stdout had 'starting up' before the READY line; nothing may precede it "
                "(diagnostics go to stderr)",
                "server stdout has 2 lines ('starting up' besides READY); the server prints "
                "exactly one line to stdout",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "sigterm-exit-1"},
            ["sigterm-client"],
            "sigterm-client",
            ["client exited with code 1, expected to exit 0 after SIGTERM; stderr: (no output)"],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "no-app-probes"},
            ["probes-events"],
            "probes-events",
            [
                "stream: client-0.events.csv has no probes event with kind=app for player(s) "
                "0, 1, 2; one is written per player and kind at exit",
                "stream: client-3.events.csv has no probes event with kind=app for player(s) "
                "3, 4; one is written per player and kind at exit",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "no-world-loaded"},
            ["player-events"],
            "player-events",
            [
                "stream: client-0.events.csv has no world_loaded event for player(s) 0, 1, 2; "
                "every connected player logs one, whatever the workload (world_loaded with "
                "objects=0 for an empty world)",
                "stream: client-3.events.csv has no world_loaded event for player(s) 3, 4; "
                "every connected player logs one, whatever the workload (world_loaded with "
                "objects=0 for an empty world)",
            ],
        ),
        (
            {"FAKE_CONFORMANCE_BREAK": "accept-known-workloads"},
            ["unknown-workload"],
            "unknown-workload",
            [
                "server accepted -workload active (not in the manifest's workloads) and started "
                "(printed 'NETSTICK READY",
                # nothing listens: the client ignoring the workload cannot connect
                "client exited with code 4 for -workload active (not in the manifest's "
                "workloads), expected 2 (bad arguments)",
                "client's stderr does not name 'active' for -workload active",
            ],
        ),
    ],
    ids=[
        "prints-before-ready",
        "exits-1-on-sigterm",
        "no-app-probes-event",
        "no-world-loaded",
        "runs-an-unlisted-workload",
    ],
)
def test_broken_stand_in_gets_the_right_violation(
    tmp_path: Path, environment: dict[str, str], only: list[str], check: str, expected: list[str]
) -> None:
    results = results_by_name(
        conformance.check_prototype(
            stand_in(**environment),
            "tcp",
            only=only,
            quick=True,
            duration_s=1.0,
            work_dir=tmp_path / "work",
        )
    )
    assert results[check].status == "fail"
    violations = list(results[check].violations)
    assert len(violations) == len(expected)
    for got, want in zip(violations, expected, strict=True):
        assert got.startswith(want), (got, want)
    assert our_children() == []


def test_app_probes_echoed_at_once_are_named(tmp_path: Path) -> None:
    """A prototype that answers app probes in its receive path, not in its next tick."""
    results = results_by_name(
        conformance.check_prototype(
            stand_in(FAKE_CONFORMANCE_BREAK="app-echo-at-once"),
            "tcp",
            only=["run-stream"],
            quick=True,
            duration_s=1.5,
            work_dir=tmp_path / "work",
        )
    )
    violations = results["run-stream"].violations
    assert results["run-stream"].status == "fail"
    assert {v.split(".rtt.csv:")[0] for v in violations} == {
        "check-logs: client-0",
        "check-logs: client-3",
    }
    assert all(
        "app probes were answered between the server's ticks (server.ticks.csv)" in v
        for v in violations
    )
    assert our_children() == []


def test_library_versions_other_than_the_manifest_are_named(tmp_path: Path) -> None:
    man = stand_in()
    doc = dict(man.raw, library_versions={"python": "9.9"})
    doc["executable"] = Path(__file__).name
    man = mf.parse(doc, FAKE_MANIFEST)
    results = results_by_name(
        conformance.check_prototype(
            man, "tcp", only=["library-versions"], quick=True, duration_s=1.0,
            work_dir=tmp_path / "work",
        )
    )  # fmt: skip
    python = "{}.{}".format(*sys.version_info[:2])
    assert results["library-versions"].violations == tuple(
        f"stream: {proc}.meta.json: library_versions says python {python!r} but the manifest "
        f"{FAKE_MANIFEST} says '9.9': the process ran with another version than declared"
        for proc in ("client-0", "client-3", "server")
    )
    assert our_children() == []


def test_ignoring_bad_arguments_is_reported_for_both_roles(tmp_path: Path) -> None:
    results = results_by_name(
        conformance.check_prototype(
            stand_in(FAKE_CONFORMANCE_BREAK="ignore-bad-args"),
            "tcp",
            only=["bad-flag", "unknown-workload", "bad-param"],
            work_dir=tmp_path / "work",
        )
    )
    bad_flag = results["bad-flag"].violations
    assert bad_flag[0] == (
        "server accepted the unknown flag -netstick-no-such-flag and started (printed "
        f"'NETSTICK READY role=server transport=tcp addr=127.0.0.1:{_port(bad_flag[0])} "
        f"pid={_pid(bad_flag[0])} schema=1')"
    )
    # the client ignores the flag, cannot reach the (absent) server and exits 4 after 1 s
    assert bad_flag[1] == (
        "client exited with code 4 for the unknown flag -netstick-no-such-flag, expected 2 "
        "(bad arguments)"
    )
    assert bad_flag[2].startswith(
        "client's stderr does not name '-netstick-no-such-flag' for the unknown flag"
    )
    assert results["unknown-workload"].status == "fail"
    assert (
        results["unknown-workload"]
        .violations[0]
        .startswith("server accepted -workload netstick-no-such-workload and started")
    )
    assert (
        results["bad-param"]
        .violations[0]
        .startswith("server accepted -workload stream -param size=17 and started")
    )
    assert our_children() == []


def _port(text: str) -> str:
    m = re.search(r"addr=127\.0\.0\.1:([0-9]+)", text)
    return m.group(1) if m else "?"


def _pid(text: str) -> str:
    m = re.search(r"pid=([0-9]+)", text)
    return m.group(1) if m else "?"


def test_unmodified_fake_client_is_not_conformant(tmp_path: Path) -> None:
    """fake_prototype.py's own client: a lost server is a Python traceback, not exit 5."""
    man = mf.load(FAKE_MANIFEST)
    results = results_by_name(
        conformance.check_prototype(
            man,
            "tcp",
            only=["server-lost", "server-stop"],
            work_dir=tmp_path / "work",
            duration_s=1.0,
        )
    )
    assert (
        results["server-stop"]
        .violations[0]
        .startswith("client exited with code 1 after its server stopped on SIGTERM, expected 5")
    )
    (violation, *rest) = results["server-lost"].violations
    assert violation.startswith(
        "client exited with code 1 after its server was killed, expected 5 (connection lost)"
    )
    assert "client-0.meta.json has status 'running' after the process exited" in rest[0]
    assert our_children() == []


def test_missing_executable_is_a_clear_error(tmp_path: Path) -> None:
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = "no-such-program"
    doc["build"] = {"command": ["make", "fake"]}
    man = mf.parse(doc, tmp_path / "prototype.yaml")
    with pytest.raises(
        conformance.ConformanceError, match=r"is missing; build it with `make fake`"
    ):
        conformance.check_prototype(man, "tcp")
    with pytest.raises(ValueError, match="no transport 'quic'"):
        conformance.check_prototype(man, "quic")


def test_cli_reports_bad_manifest_and_transport(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "prototype.yaml"
    bad.write_text("name: x\n")
    assert cli_main(["check-prototype", str(bad)]) == 2
    assert "contract_schema: missing" in capsys.readouterr().err
    assert cli_main(["check-prototype", str(FAKE_MANIFEST), "--transport", "quic"]) == 2
    assert "--transport quic: expected names from" in capsys.readouterr().err


@needs_reference_binary
def test_reference_tcp_quick_passes_via_cli(capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.monotonic()
    code = cli_main(["check-prototype", str(REFERENCE_MANIFEST), "--transport", "tcp", "--quick"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "15 passed, 0 failed, 1 skipped" in out
    assert time.monotonic() - t0 < 20
    assert our_children() == []


def test_stand_in_script_rejects_bad_arguments_directly(tmp_path: Path) -> None:
    """The stand-in itself (sanity check of the test double, without the checker)."""
    proc = subprocess.run(
        [sys.executable, __file__, "-role", "server", "-log-dir", str(tmp_path), "-bogus", "1"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "unknown flag -bogus" in proc.stderr


if __name__ == "__main__":
    sys.exit(stand_in_main(sys.argv[1:]))
