"""The harness end to end: real prototypes, real namespaces, real faults.

Every test ends with nothing of its run left behind, no process and no namespace or veth of the
sandbox (the run tier's fixture checks that, e2e/run/conftest.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.logs import read_ticks_csv
from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.marks import needs_netemu, needs_reference_binary, needs_root
from support.paths import FAKE_MANIFEST, REPO


def _cell(**kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": "tcp",
        "players": 6,
        "workload": "stream",
        "params": {"size": 100, "rate": 30},
        "duration_s": 1.5,
        "sample_interval_s": 0.25,
        "connect_timeout_s": 15,
        "baseline_s": 0.5,
    }
    doc.update(kw)
    cell = cells.validate(doc)
    cell.setdefault("cell_id", layout.derive_cell_id(cell))  # the harness names runs by it
    return cell


def _status(path: Path) -> dict[str, Any]:
    return json.loads((path / "status.json").read_text())


@needs_reference_binary
@needs_root
@pytest.mark.parametrize("transport", ["tcp", "udp", "quic", "webrtc"])
def test_run_per_transport_family_in_namespaces(tmp_path: Path, transport: str) -> None:
    out = tmp_path / "run-ok"
    res = harness.run_cell(_cell(transport=transport), out)
    assert res.status == "ok", res.detail
    assert res.path == out and not (tmp_path / "run-ok.failed").exists()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["isolation"] == "netns"
    assert meta["network_profile"]["name"] == "lan"
    for key in ("sandbox", "server_ready", "clients_connected", "measurement", "stop"):
        assert key in meta["phases_s"]
    assert meta["versions"]["prototypes"][0]["go_modules"]["github.com/quic-go/quic-go"]
    assert meta["commands"]["server"][0].endswith("netstick-ref")
    # Every client process's connect time, from its CONNECTED line: within the connect timeout.
    clients = {name for name in meta["launch_prefixes"] if name.startswith("client-")}
    assert clients and set(meta["connect_s"]) == clients
    assert all(isinstance(s, float) and 0 <= s < 15 for s in meta["connect_s"].values())
    assert check_log_dir(out / "logs") == []
    assert (out / "monitor.csv").read_text().count("\n") > 3
    assert (out / "net.csv").exists()


@needs_reference_binary
@needs_root
def test_udp_wire_bytes_equal_application_bytes(tmp_path: Path) -> None:
    """Every frame on the server's veth is a UDP datagram of the transport: application bytes
    plus 1 channel byte + 8 UDP + 20 IPv4 + 14 Ethernet, and a few control datagrams."""
    out = tmp_path / "run"
    res = harness.run_cell(_cell(transport="udp", players=5), out)
    assert res.status == "ok", res.detail
    meta = json.loads((out / "meta.json").read_text())
    rx = meta["net_totals"]["server"]
    ticks = read_ticks_csv(out / "logs" / "server.ticks.csv")
    msgs_in = sum(int(t["msgs_in"]) for t in ticks)
    bytes_in = sum(int(t["bytes_in"]) for t in ticks)
    control = rx["rx_packets"] - msgs_in  # connect requests and disconnects
    assert 0 <= control <= 5 * 4, f"{control} frames beyond the application's messages"
    overhead = 1 + 8 + 20 + 14
    extra = rx["rx_bytes"] - (bytes_in + overhead * msgs_in)
    # Control datagrams are the header plus at most a 4-byte magic.
    assert overhead * control <= extra <= (overhead + 4) * control


@needs_reference_binary
@needs_root
def test_tcp_wire_bytes_at_least_application_bytes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = harness.run_cell(_cell(transport="tcp", players=5), out)
    assert res.status == "ok", res.detail
    meta = json.loads((out / "meta.json").read_text())
    rx = meta["net_totals"]["server"]
    ticks = read_ticks_csv(out / "logs" / "server.ticks.csv")
    bytes_in = sum(int(t["bytes_in"]) for t in ticks)
    msgs_in = sum(int(t["msgs_in"]) for t in ticks)
    assert rx["rx_bytes"] >= bytes_in + 5 * msgs_in + 54 * msgs_in // 2


# -- faults -------------------------------------------------------------------------------------


def _run_in_background(cell: dict[str, Any], out: Path, tmp_path: Path) -> subprocess.Popen[str]:
    cell_path = tmp_path / "cell.json"
    cell_path.write_text(json.dumps(cell))
    return subprocess.Popen(
        [sys.executable, "-m", "workflow.cli.main", "run-cell", str(cell_path), "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_file(pattern: str, root: Path, timeout_s: float = 20) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(root.glob(pattern))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{pattern} did not appear under {root}")


def _pid_of(meta_path: Path) -> int:
    for _ in range(100):
        try:
            return int(json.loads(meta_path.read_text())["pid"])
        except (json.JSONDecodeError, KeyError, FileNotFoundError):
            time.sleep(0.05)
    raise AssertionError(f"no pid in {meta_path}")


@needs_reference_binary
@pytest.mark.parametrize("victim", ["server", "client-0"])
def test_process_killed_mid_run_fails_the_run(tmp_path: Path, victim: str) -> None:
    out = tmp_path / "run"
    cell = _cell(duration_s=8, isolation="none")
    proc = _run_in_background(cell, out, tmp_path)
    meta = _wait_for_file(f".run.tmp-*/logs/{victim}.meta.json", tmp_path)
    _wait_for_file(".run.tmp-*/logs/client-0.meta.json", tmp_path)
    time.sleep(2.0)  # well inside the measurement window
    os.kill(_pid_of(meta), signal.SIGKILL)
    _stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    assert not out.exists(), "a failed run must not sit where data is expected"
    failed = next((tmp_path / "run.failed").iterdir())
    status = _status(failed)
    assert status["status"] == "failed"
    assert status["reason"] in {"client_exit", "server_exit"}
    if victim == "server":
        assert status["exit_codes"]["client-0"] == 5, "players exit 5 when the server is lost"
        # The server's own exit is the cause, and stays on record.
        assert status["exit_codes"]["server"] == -signal.SIGKILL
        assert status["reason"] == "server_exit"
        assert "server exited with code -9 (killed by SIGKILL) during the run" in status["detail"]
    else:
        assert status["exit_codes"]["client-0"] == -signal.SIGKILL
    assert (failed / "logs" / "client-0.rtt.csv").exists(), "the logs are kept for diagnosis"


def test_server_never_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "never-ready")
    out = tmp_path / "run"
    cell = _cell(prototype=str(FAKE_MANIFEST), isolation="none", ready_timeout_s=1.5)
    t0 = time.monotonic()
    res = harness.run_cell(cell, out)
    assert res.status == "failed" and res.reason == "not_ready"
    assert time.monotonic() - t0 < 10
    assert "server stderr" in res.detail
    assert not out.exists()


@needs_reference_binary
def test_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        res = harness.run_cell(_cell(isolation="none", port=port), tmp_path / "run")
    assert res.status == "failed" and res.reason == "server_exit"
    assert "code 3" in res.detail
    assert _status(res.path)["exit_codes"]["server"] == 3


@needs_reference_binary
@pytest.mark.parametrize(
    ("isolation", "sig"),
    [
        ("none", signal.SIGINT),
        ("none", signal.SIGTERM),
        pytest.param("netns", signal.SIGINT, marks=needs_root),
    ],
)
def test_interrupted_harness_cleans_up(tmp_path: Path, isolation: str, sig: signal.Signals) -> None:
    out = tmp_path / "run"
    proc = _run_in_background(_cell(duration_s=30, isolation=isolation), out, tmp_path)
    _wait_for_file(".run.tmp-*/logs/client-0.meta.json", tmp_path)
    time.sleep(1.0)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, stderr
    assert not out.exists()
    failed = next((tmp_path / "run.failed").iterdir())
    assert _status(failed)["reason"] == "interrupted"
    assert not list(tmp_path.glob(".run.tmp-*")), "no temporary directory left"


# -- network profiles measured by the probe -------------------------------------------------------


def _net_rtts_ms(run: Path) -> Any:
    from prototypes.contract.logs import read_rtt_logs

    rtt = read_rtt_logs(run / "logs")
    return rtt.rtt_us[rtt.kind == "net"] / 1000.0


def _echo_loss(run: Path) -> float:
    from prototypes.contract.logs import parse_detail, read_events_csv

    sent = lost = 0
    for e in read_events_csv(run / "logs" / "client-0.events.csv"):
        if e["event"] == "probes" and parse_detail(e["detail"])["kind"] == "net":
            d = parse_detail(e["detail"])
            sent += int(e["value"])
            lost += int(d["lost"]) + int(d["inflight"])
    return lost / sent


@needs_reference_binary
@needs_root
@needs_netemu
def test_profile_delay_is_what_the_probe_measures(tmp_path: Path) -> None:
    import numpy as np

    profile = {"description": "25 ms each way", "up": {"delay_ms": 25}, "down": {"delay_ms": 25}}
    res = harness.run_cell(
        _cell(transport="udp", players=10, duration_s=3, network_profile=profile), tmp_path / "r"
    )
    assert res.status == "ok", res.detail
    p50 = float(np.percentile(_net_rtts_ms(res.path), 50))
    assert abs(p50 - 50.0) <= 0.5, f"RTT p50 {p50:.3f} ms with 25 ms injected each way"
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["emulator"]["ab"]["frames_in"] > 0 and meta["emulator_command"]


@needs_reference_binary
@needs_root
@needs_netemu
def test_profile_loss_is_what_the_probe_measures(tmp_path: Path) -> None:
    """lossy: 5 % each way, so an echo is lost with probability 1 - 0.95^2 = 9.75 %."""
    res = harness.run_cell(
        _cell(
            transport="udp",
            players=10,
            duration_s=6,
            params={"size": 100, "rate": 60, "channel": "unreliable"},
            network_profile="lossy",
        ),
        tmp_path / "r",
    )
    assert res.status == "ok", res.detail
    loss = _echo_loss(res.path)
    assert abs(loss - 0.0975) <= 0.02, f"echo loss {loss:.4f}, expected 0.0975 +- 0.02"


@needs_reference_binary
@needs_root
@needs_netemu
def test_wan_profile_round_trip(tmp_path: Path) -> None:
    """wan: 50 ms each way with 5 ms normal jitter, so RTTs centre on 100 ms."""
    import numpy as np

    res = harness.run_cell(
        _cell(transport="udp", players=5, duration_s=3, network_profile="wan"), tmp_path / "r"
    )
    assert res.status == "ok", res.detail
    rtts = _net_rtts_ms(res.path)
    p50 = float(np.percentile(rtts, 50))
    assert abs(p50 - 100.0) <= 1.5, f"RTT p50 {p50:.2f} ms"
    # Two independent N(0, 5 ms) one-way jitters: the RTT spread is about 7.1 ms.
    assert 5.0 <= float(np.std(rtts)) <= 9.5


@needs_reference_binary
def test_without_isolation_traffic_is_counted_on_every_nic_minus_baseline(tmp_path: Path) -> None:
    res = harness.run_cell(_cell(isolation="none", players=5), tmp_path / "run")
    assert res.status == "ok", res.detail
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["isolation"] == "none"
    assert "lo" in meta["idle_baseline"]
    lo = {r["field"]: r for r in meta["net_totals_corrected"] if r["iface"] == "lo"}
    ticks = read_ticks_csv(res.path / "logs" / "server.ticks.csv")
    bytes_in = sum(int(t["bytes_in"]) for t in ticks)
    # On loopback every byte is counted once as rx and once as tx; the run's traffic must
    # stand out of the idle noise and carry at least the server's application bytes.
    assert not lo["rx_bytes"]["within_noise"]
    assert lo["rx_bytes"]["corrected"] >= bytes_in
    assert (res.path / "net.csv").read_text().count("\n") > 3


def test_whole_process_group_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "helper.pid"
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "helper")
    monkeypatch.setenv("FAKE_PROTOTYPE_HELPER_PID", str(pid_file))
    cell = _cell(prototype=str(FAKE_MANIFEST), isolation="none", players=2, duration_s=0.5)
    res = harness.run_cell(cell, tmp_path / "run")
    assert res.status == "ok", res.detail
    helper_pid = int(pid_file.read_text())
    # The helper ignores SIGTERM; the harness's SIGKILL of the server's group must reach it.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and _alive(helper_pid):
        time.sleep(0.05)
    assert not _alive(helper_pid)


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting for init to reap it does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
