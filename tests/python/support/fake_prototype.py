"""A tiny stand-in prototype that follows prototypes/CONTRACT.md, for testing the harness.

It speaks plain TCP on loopback (fixed 16-byte probes echoed by the server's receive path, or in
its next tick when the player field is negative: the app probes of support/conformant_stand_in.py)
and writes contract logs, so the harness and prototypes.contract.checklogs can be tested end to end
without the Go reference prototype. FAKE_PROTOTYPE_MODE selects a misbehaviour:

- ``never-ready``: the server complains on stderr and never prints READY;
- ``helper``: the server starts a grandchild that ignores SIGTERM and writes its pid to
  FAKE_PROTOTYPE_HELPER_PID (to test that the harness kills whole process groups);
- ``client-fail``: the client exits with code 4 (a player could not connect);
- ``bad-args``: the server rejects its arguments (exit code 2);
- ``chatty``: the server prints a line to stdout before its READY line.
- ``fail-once``: the first server started for a seed fails to bind (exit 3), every later one
  works (a flaky run for retry tests); FAKE_PROTOTYPE_STATE_DIR holds one marker per seed.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from monitors.stopsignal import StopSignal
from prototypes.contract import lines

MODE = os.environ.get("FAKE_PROTOTYPE_MODE", "")
PROBE = struct.Struct("<qq")  # player (negative: echo in the next tick), seq
TICK_S = 0.05


def parse_flags(argv: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    flags: dict[str, str] = {}
    params: dict[str, str] = {}
    i = 0
    while i < len(argv):
        name = argv[i].lstrip("-")
        if "=" in name:
            name, value = name.split("=", 1)
            i += 1
        else:
            value = argv[i + 1]
            i += 2
        if name == "param":
            k, _, v = value.partition("=")
            params[k] = v
        else:
            flags[name] = value
    return flags, params


class Logs:
    def __init__(
        self, log_dir: Path, proc: str, role: str, flags: dict[str, str], params: dict[str, str]
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.dir, self.proc = log_dir, proc
        self.lock = threading.Lock()
        self.meta = {
            "schema": 1,
            "role": role,
            "prototype": "fake",
            "transport": flags["transport"],
            # As fake-prototype.yaml declares it: the interpreter's major.minor version.
            "library_versions": {"python": "{}.{}".format(*sys.version_info[:2])},
            "args": sys.argv,
            "workload": flags.get("workload", "idle"),
            "params": params,
            "transport_options": {},
            "effective_channels": {
                "reliable": "reliable",
                "unreliable": "reliable (carried on the TCP stream)",
            },
            "run_id": flags.get("run-id", "local"),
            "seed": int(flags.get("seed", "1")),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "start_unix_ns": time.time_ns(),
            "status": "running",
        }
        self.write_meta()
        self.events = self._open("events", "t_unix_ns,player,event,value,detail")

    def _open(self, kind: str, header: str):  # type: ignore[no-untyped-def]
        f = (self.dir / f"{self.proc}.{kind}.csv").open("w", encoding="utf-8")
        f.write(header + "\n")
        f.flush()
        return f

    def row(self, f, *fields: object) -> None:  # type: ignore[no-untyped-def]
        with self.lock:
            f.write(",".join("" if x is None else str(x) for x in fields) + "\n")
            f.flush()

    def write_meta(self) -> None:
        (self.dir / f"{self.proc}.meta.json").write_text(json.dumps(self.meta))

    def exit(self, code: int, reason: str) -> None:
        self.meta.update(
            status="exited", end_unix_ns=time.time_ns(), exit_code=code, exit_reason=reason
        )
        self.write_meta()


def recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def server(flags: dict[str, str], params: dict[str, str]) -> int:
    if MODE == "bad-args":
        print("fake: -transport: unknown transport", file=sys.stderr)
        return 2
    if MODE == "fail-once":
        marker = Path(os.environ["FAKE_PROTOTYPE_STATE_DIR"]) / f"failed-{flags['seed']}"
        if not marker.exists():
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text("failed once\n")
            print("fake: cannot bind (fail-once)", file=sys.stderr, flush=True)
            return 3
    if MODE == "never-ready":
        print("fake: pretending the listener cannot start", file=sys.stderr, flush=True)
        time.sleep(60)
        return 3
    logs = Logs(Path(flags["log-dir"]), "server", "server", flags, params)
    ticks = logs._open(
        "ticks",
        "t_unix_ns,tick,tick_late_us,tick_duration_us,players_connected,"
        "networked_objects,msgs_in,msgs_out,bytes_in,bytes_out",
    )
    host, port = flags.get("host", "127.0.0.1"), int(flags.get("port", "7777"))
    lsock = socket.socket()
    try:
        lsock.bind((host, port))
    except OSError as exc:
        print(f"fake: cannot bind {host}:{port}: {exc}", file=sys.stderr)
        return 3
    lsock.listen(256)
    if MODE == "helper":
        helper = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time; signal.signal(signal.SIGTERM, "
                "signal.SIG_IGN); time.sleep(120)",
            ]
        )
        Path(os.environ["FAKE_PROTOTYPE_HELPER_PID"]).write_text(str(helper.pid))
    stop = StopSignal().install()  # the contract: SIGINT like SIGTERM
    connected = [0]
    tick_echoes: list[tuple[socket.socket, bytes]] = []  # app probes waiting for the next tick
    echoes_lock = threading.Lock()
    # Messages in and out since the last tick row (CONTRACT.md 3.4: echoes count).
    counts = {"in": 0, "out": 0}

    def serve(conn: socket.socket) -> None:
        connected[0] += 1
        try:
            while True:
                probe = recv_exact(conn, PROBE.size)
                with echoes_lock:
                    counts["in"] += 1
                    at_tick = PROBE.unpack(probe)[0] < 0
                    if at_tick:
                        tick_echoes.append((conn, probe))
                if not at_tick:
                    conn.sendall(probe)
                    with echoes_lock:
                        counts["out"] += 1
        except OSError:
            pass
        finally:
            connected[0] -= 1

    def accept() -> None:
        while True:
            conn, addr = lsock.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            logs.row(logs.events, time.time_ns(), "", "join", "", f"remote={addr[0]}:{addr[1]}")
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    logs.row(logs.events, time.time_ns(), "", "listen", "", f"addr={host}:{port}")
    if MODE == "chatty":
        print("starting up", flush=True)
    print(lines.ready_line(flags["transport"], host, port, os.getpid()), flush=True)
    threading.Thread(target=accept, daemon=True).start()
    tick = 0
    while not stop.wait(TICK_S):
        start_ns = time.monotonic_ns()
        with echoes_lock:
            echoes = tick_echoes[:]
            tick_echoes.clear()
        for conn, probe in echoes:
            with contextlib.suppress(OSError):
                conn.sendall(probe)
        with echoes_lock:
            msgs_in, msgs_out = counts["in"], counts["out"] + len(echoes)
            counts["in"] = counts["out"] = 0
        work_us = (time.monotonic_ns() - start_ns) / 1e3
        size = PROBE.size
        logs.row(ticks, time.time_ns(), tick, 0, f"{work_us:.1f}", connected[0], connected[0],
                 msgs_in, msgs_out, msgs_in * size, msgs_out * size)  # fmt: skip
        tick += 1
    logs.row(logs.events, time.time_ns(), "", "disconnect", "", "reason=sigterm")
    logs.exit(0, "sigterm")
    return 0


def client(flags: dict[str, str], params: dict[str, str]) -> int:
    first = int(flags.get("first-player", "0"))
    players = int(flags.get("players", "1"))
    logs = Logs(Path(flags["log-dir"]), f"client-{first}", "client", flags, params)
    rtt = logs._open("rtt", "t_unix_ns,player,seq,rtt_us,kind,send_late_us")
    if MODE == "client-fail":
        print("fake: player 0 could not connect", file=sys.stderr)
        logs.exit(4, "connect timeout")
        return 4
    host, port = flags.get("host", "127.0.0.1"), int(flags.get("port", "7777"))
    t0 = time.monotonic()
    socks = []
    for p in range(first, first + players):
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
        logs.row(logs.events, time.time_ns(), p, "connect", 1.0, "")
    print(lines.connected_line(players, first, time.monotonic() - t0), flush=True)
    rate_hz = float(params.get("rate", "20"))
    period_s = 1.0 / rate_hz
    end = time.monotonic() + float(flags.get("duration", "1"))
    seq = 0
    deadline = time.monotonic()
    while deadline < end:
        time.sleep(max(0.0, deadline - time.monotonic()))
        late_us = (time.monotonic() - deadline) * 1e6
        for i, s in enumerate(socks):
            t_ns = time.time_ns()
            sent = time.monotonic()
            s.sendall(PROBE.pack(first + i, seq))
            recv_exact(s, PROBE.size)
            rtt_us = (time.monotonic() - sent) * 1e6
            logs.row(rtt, t_ns, first + i, seq, f"{rtt_us:.1f}", "net", f"{late_us:.1f}")
        seq += 1
        deadline += period_s
    for i, s in enumerate(socks):
        logs.row(
            logs.events,
            time.time_ns(),
            first + i,
            "probes",
            seq,
            f"kind=net echoed={seq} lost=0 inflight=0",
        )
        s.close()
    logs.exit(0, "duration elapsed")
    return 0


def main() -> int:
    flags, params = parse_flags(sys.argv[1:])
    return server(flags, params) if flags["role"] == "server" else client(flags, params)


if __name__ == "__main__":
    sys.exit(main())
