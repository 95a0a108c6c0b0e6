"""End to end: the Go reference prototype over every transport, real processes and sockets.

Each transport runs three workloads (together they cover all eight) through the harness; the logs
must conform to CONTRACT.md and show the workload's effect, and the stats stage measures each
run directory. Then the failure paths of CONTRACT.md section 2:
bad flags, bind failure, connect failure, unwritable log dir, SIGTERM, a server killed mid-run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.logs import parse_detail, read_events_csv, read_rtt_csv, read_ticks_csv
from prototypes.contract.processes import pick_free_port
from stats.runs_table import read_run_dir
from workflow.bench.cells import measure
from workflow.harness import cell as cells
from workflow.harness.run import run_cell

from support.marks import needs_reference_binary
from support.paths import REFERENCE_BINARY

PLAYERS = 8
LIB_RTT = {"kcp", "quic", "enet", "webrtc"}  # transports whose library keeps an RTT estimate

WORKLOADS: dict[str, dict[str, str]] = {
    "stream": {"size": "100", "rate": "60"},
    "active": {"blocks": "3", "interval": "0.3"},
    "world": {"size": "S"},
    "wander": {"speed": "4"},
    "pingpong": {"count": "50"},
    "rpc-toggle": {"interval": "0.2"},
    "envmod": {"interval": "0.2"},
    "idle": {},
}
MATRIX = {
    "tcp": ["stream", "active", "world"],
    "udp": ["stream", "wander", "pingpong"],
    "kcp": ["stream", "rpc-toggle", "envmod"],
    "enet": ["stream", "active", "world"],
    "quic": ["stream", "wander", "pingpong"],
    "ws": ["stream", "idle", "rpc-toggle"],
    "webrtc": ["stream", "envmod", "idle"],
}
CASES = [(t, w) for t, ws in MATRIX.items() for w in ws]


def test_matrix_covers_every_workload() -> None:
    assert {w for _, w in CASES} == set(WORKLOADS)


def _events(log_dir: Path, proc: str) -> list[dict[str, str]]:
    return read_events_csv(log_dir / f"{proc}.events.csv")


@needs_reference_binary
@pytest.mark.parametrize(("transport", "workload"), CASES)
def test_transport_runs_workload(tmp_path: Path, transport: str, workload: str) -> None:
    cell = cells.validate(
        {
            "cell_id": f"ref-{transport}-{workload}",
            "prototype": "prototypes/reference/prototype.yaml",
            "transport": transport,
            "players": PLAYERS,
            "workload": workload,
            "params": WORKLOADS[workload],
            "duration_s": 2.0,
            "sample_interval_s": 0.25,
            "baseline_s": 0,
        }
    )
    outcome = run_cell(cell, tmp_path / "run")
    assert outcome.status == "ok", f"{outcome.reason}: {outcome.detail}"
    status = json.loads((outcome.path / "status.json").read_text())
    assert status["counts"]["players_connected"] == PLAYERS
    log_dir = outcome.path / "logs"
    assert [str(v) for v in check_log_dir(log_dir)] == []
    # The stats stage measures the run directory as it stands.
    row = measure(read_run_dir(outcome.path))
    assert row["rtt_net_samples"] > 0 and row["rtt_net_p50_us"] > 0

    rtt = read_rtt_csv(log_dir / "client-0.rtt.csv")
    kinds = Counter(rtt.kind.tolist())
    players_seen = set(rtt.player[rtt.kind == "net"].tolist())
    assert players_seen == set(range(PLAYERS)), "every player has net RTT samples"
    assert kinds["app"] > 0, "app probes run beside every workload"
    assert (kinds["lib"] > 0) == (transport in LIB_RTT)
    # Measured probes always take time; a library estimate may read 0 (KCP counts whole ms).
    assert float(rtt.rtt_us[rtt.kind != "lib"].min()) > 0

    client = _events(log_dir, "client-0")
    server = _events(log_dir, "server")
    names = Counter(e["event"] for e in client)
    assert names["connect"] == PLAYERS and names["spawn"] == PLAYERS
    assert names["world_loaded"] == PLAYERS
    assert Counter(e["event"] for e in server)["join"] == PLAYERS
    probes = [
        parse_detail(e["detail"]) | {"sent": e["value"]} for e in client if e["event"] == "probes"
    ]
    assert probes and all(int(p["lost"]) == 0 for p in probes if transport != "udp")

    if workload == "stream":
        # 60 Hz for 2 s per player, minus the phase offset of the first send.
        assert kinds["net"] >= PLAYERS * 60 * 2 * 0.9
    elif workload == "pingpong":
        assert kinds["net"] == PLAYERS * 50, "pingpong sends exactly count probes per player"
        assert all(late != late for late in rtt.send_late_us[rtt.kind == "net"].tolist()), (
            "pingpong sends are unscheduled: send_late_us is empty"
        )
    elif workload == "active":
        acks = [e for e in client if e["event"] == "block_ack"]
        assert len(acks) == PLAYERS * 3
        assert all(parse_detail(e["detail"])["ok"] == "true" for e in acks)
        ticks = read_ticks_csv(log_dir / "server.ticks.csv")
        assert max(int(t["networked_objects"]) for t in ticks) == PLAYERS + PLAYERS * 3
    elif workload == "world":
        loaded = [parse_detail(e["detail"]) for e in client if e["event"] == "world_loaded"]
        assert all(d["objects"] == "7500" and int(d["bytes"]) > 7500 * 3 for d in loaded)
    elif workload == "wander":
        ticks = read_ticks_csv(log_dir / "server.ticks.csv")
        # Inputs at the tick rate dominate the inbound messages; positions are relayed.
        assert sum(int(t["msgs_in"]) for t in ticks) > PLAYERS * 60 * 1.5
        assert sum(int(t["msgs_out"]) for t in ticks) > 60 * 1.5 * PLAYERS
    elif workload == "rpc-toggle":
        acks = [parse_detail(e["detail"]) for e in client if e["event"] == "block_ack"]
        assert len(acks) >= PLAYERS * 8 and all(a["ok"] == "true" for a in acks)
    elif workload == "envmod":
        steps = [e for e in server if e["event"] == "envmod_step"]
        assert len(steps) >= 5 and all(e["value"] == "300" for e in steps)
        intervals = [float(parse_detail(e["detail"])["interval_s"]) for e in steps]
        assert intervals == sorted(intervals, reverse=True), "the interval shrinks each step"


# -- failure paths ------------------------------------------------------------------------------


def _run(args: list[str], timeout_s: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REFERENCE_BINARY), *args], capture_output=True, text=True, timeout=timeout_s
    )


@needs_reference_binary
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-role", "server"], "-log-dir"),
        (["-role", "referee", "-log-dir", "x"], "-role"),
        (["-role", "client", "-log-dir", "x", "-players", "-4"], "-players"),
        (["-role", "client", "-log-dir", "x", "-transport", "carrier-pigeon"], "carrier-pigeon"),
        (
            ["-role", "client", "-log-dir", "x", "-workload", "stream", "-param", "rate=fast"],
            "rate",
        ),
        (["-role", "client", "-log-dir", "x", "-param", "t.nodelay=1"], "nodelay"),
        (["-role", "client", "-log-dir", "x", "-transport", "kcp", "-param", "t.mtu=big"], "mtu"),
        (["-role", "client", "-log-dir", "x", "--frobnicate"], "frobnicate"),
    ],
)
def test_bad_arguments_exit_2_and_name_the_culprit(
    tmp_path: Path, args: list[str], named: str
) -> None:
    res = _run([a.replace("x", str(tmp_path / "logs")) if a == "x" else a for a in args])
    assert res.returncode == 2, res.stderr
    assert named in res.stderr
    assert res.stdout == ""


def _server(tmp_path: Path, port: int, transport: str = "tcp") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [str(REFERENCE_BINARY), "-role", "server", "-transport", transport, "-port", str(port),
         "-log-dir", str(tmp_path / "logs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("NETSTICK READY role=server"), line
    return proc


@needs_reference_binary
def test_bind_failure_exits_3(tmp_path: Path) -> None:
    port = pick_free_port()
    first = _server(tmp_path / "a", port)
    try:
        res = _run(["-role", "server", "-port", str(port), "-log-dir", str(tmp_path / "b")])
        assert res.returncode == 3
        assert "bind" in res.stderr and str(port) in res.stderr
        meta = json.loads((tmp_path / "b" / "server.meta.json").read_text())
        assert meta["exit_code"] == 3 and meta["status"] == "exited"
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=5) == 0


@needs_reference_binary
@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_connect_failure_exits_4(tmp_path: Path, transport: str) -> None:
    port = pick_free_port()
    res = _run(["-role", "client", "-transport", transport, "-port", str(port), "-players", "3",
                "-connect-timeout-s", "1.5", "-log-dir", str(tmp_path)])  # fmt: skip
    assert res.returncode == 4, res.stderr
    assert "could not connect" in res.stderr
    failed = [e for e in _events(tmp_path, "client-0") if e["event"] == "connect_failed"]
    assert failed


@needs_reference_binary
def test_unwritable_log_dir_exits_6(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = _run(["-role", "server", "-log-dir", str(blocker / "logs")])
    assert res.returncode == 6
    assert "-log-dir" in res.stderr


@needs_reference_binary
def test_sigterm_flushes_and_exits_0(tmp_path: Path) -> None:
    port = pick_free_port()
    server = _server(tmp_path, port)
    client = subprocess.Popen(
        [str(REFERENCE_BINARY), "-role", "client", "-port", str(port), "-players", "5",
         "-workload", "stream", "-log-dir", str(tmp_path / "logs")],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert client.stdout is not None
        assert client.stdout.readline().startswith("NETSTICK CONNECTED players=5")
        time.sleep(1.0)
        t0 = time.monotonic()
        client.send_signal(signal.SIGTERM)
        assert client.wait(timeout=5) == 0
        assert time.monotonic() - t0 < 2.0, "CONTRACT.md: exit within 2 s of SIGTERM"
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
    log_dir = tmp_path / "logs"
    assert [str(v) for v in check_log_dir(log_dir)] == []
    probes = [e for e in _events(log_dir, "client-0") if e["event"] == "probes"]
    assert len(probes) == 5 * 2  # net (the stream) and app, per player


@needs_reference_binary
@pytest.mark.parametrize("transport", ["tcp", "udp", "quic", "enet"])
def test_server_killed_mid_run(tmp_path: Path, transport: str) -> None:
    """Players exit 5 (server lost) with their logs intact; the server's logs hold whole lines."""
    port = pick_free_port()
    server = _server(tmp_path, port, transport)
    client = subprocess.Popen(
        [str(REFERENCE_BINARY), "-role", "client", "-transport", transport, "-port", str(port),
         "-players", "10", "-workload", "stream", "-param", "rate=30", "-duration", "30",
         "-log-dir", str(tmp_path / "logs")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert client.stdout is not None
        assert client.stdout.readline().startswith("NETSTICK CONNECTED")
        time.sleep(1.0)
        server.kill()
        server.wait(timeout=5)
        code = client.wait(timeout=15)
    finally:
        for p in (client, server):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert code == 5, client.stderr.read() if client.stderr else ""
    log_dir = tmp_path / "logs"
    client_problems = [str(v) for v in check_log_dir(log_dir) if v.file.startswith("client-0")]
    assert client_problems == []
    meta = json.loads((log_dir / "client-0.meta.json").read_text())
    assert meta["exit_code"] == 5 and "lost" in meta["exit_reason"]
    names = Counter(e["event"] for e in _events(log_dir, "client-0"))
    assert names["server_lost"] == 1 and names["probes"] == 20
    for name in ("server.ticks.csv", "server.events.csv"):
        data = (log_dir / name).read_bytes()
        assert data.endswith(b"\n"), f"{name} ends in a torn line"
