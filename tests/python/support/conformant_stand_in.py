"""A conformant stand-in prototype, for the conformance checker's tests (netstick
check-prototype; tests/python/e2e/run/test_conformance.py).

fake_prototype.py implements only what the harness tests need: its client has no SIGTERM
handler, no app probes, no exit codes 4 and 5, and neither role rejects bad arguments. This
script validates the arguments like the contract asks, serves with fake_prototype's server
unchanged (it echoes probes with a negative player field in its next tick: the app probes) and
plays with `conformant_client` below. FAKE_CONFORMANCE_BREAK (set through the manifest's
`environment`) breaks one rule at a time, and each broken variant must produce the right
violation. manifest() is fake-prototype.yaml running this script.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from monitors.stopsignal import StopSignal
from prototypes.contract import manifest as mf

try:  # imported by the tests
    from support import fake_prototype as fp
except ModuleNotFoundError:  # run as the prototype's executable: this directory is sys.path[0]
    import fake_prototype as fp  # type: ignore[no-redef]

FAKE_MANIFEST = Path(__file__).with_name("fake-prototype.yaml")
BREAK = os.environ.get("FAKE_CONFORMANCE_BREAK", "")

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
                    print(
                        f"fake: player {p} over {flags['transport']}: could not connect within "
                        f"-connect-timeout-s {timeout_s:g}: {exc}",
                        file=sys.stderr,
                    )
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
    if BREAK == "duration-zero-exits" and duration_s == 0:
        end = time.monotonic()
    if BREAK == "client-ignores-duration":
        end = float("inf")
    if BREAK == "client-ignores-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
        if BREAK == "server-refuses-client-flags" and "players" in flags:
            print("fake: -players is a client flag", file=sys.stderr)
            return 2
        return fp.server(flags, params)  # FAKE_PROTOTYPE_MODE=chatty prints before READY
    return conformant_client(flags, params)


def manifest(**environment: str) -> mf.Manifest:
    """fake-prototype.yaml, running this script as the conformant stand-in."""
    doc: dict[str, Any] = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["executable"] = Path(__file__).name
    doc["optional_flags"] = ["connect-timeout-s"]
    doc["environment"] = environment
    # What the fake records in its meta.json (the interpreter that runs the tests).
    doc["library_versions"] = {"python": "{}.{}".format(*sys.version_info[:2])}
    return mf.parse(doc, FAKE_MANIFEST)


if __name__ == "__main__":
    sys.exit(stand_in_main(sys.argv[1:]))
