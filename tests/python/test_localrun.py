"""workflow.cli.bench.localrun: command lines, ports, and whole runs against a fake prototype."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import psutil
import pytest

from workflow.cli.bench.localrun import (
    LocalRunError,
    RunConfig,
    client_argv,
    parse_netstick_line,
    pick_free_port,
    probe_loss_ratio,
    run_local,
    server_argv,
)


def config(binary: Path, run_dir: Path, **kw: object) -> RunConfig:
    base: dict[str, object] = {
        "binary": binary,
        "transport": "tcp",
        "players": 3,
        "duration_s": 1.5,
        "warmup_s": 0.3,
        "run_dir": run_dir,
        "params": {"size": "100", "rate": "20"},
        "sample_interval_s": 0.1,
    }
    base.update(kw)
    return RunConfig(**base)  # type: ignore[arg-type]


def test_command_lines_follow_the_contract(tmp_path: Path) -> None:
    cfg = config(
        Path("/bin/proto"), tmp_path, players=20, duration_s=6.0, seed=7, run_id="demo-tcp"
    )
    logs = tmp_path / "logs"
    assert server_argv(cfg, 9000, logs) == [
        "/bin/proto", "-role", "server", "-transport", "tcp", "-host", "127.0.0.1",
        "-port", "9000", "-workload", "stream", "-param", "size=100", "-param", "rate=20",
        "-duration", "0", "-log-dir", str(logs), "-run-id", "demo-tcp", "-seed", "7",
    ]  # fmt: skip
    assert client_argv(cfg, 9000, logs) == [
        "/bin/proto", "-role", "client", "-transport", "tcp", "-host", "127.0.0.1",
        "-port", "9000", "-players", "20", "-first-player", "0", "-workload", "stream",
        "-param", "size=100", "-param", "rate=20", "-duration", "6", "-log-dir", str(logs),
        "-run-id", "demo-tcp", "-seed", "7",
    ]  # fmt: skip
    fractional = config(Path("/bin/proto"), tmp_path, duration_s=2.5)
    assert (
        client_argv(fractional, 1, logs)[client_argv(fractional, 1, logs).index("-duration") + 1]
        == "2.5"
    )


def test_parse_netstick_lines() -> None:
    assert parse_netstick_line(
        "NETSTICK READY role=server transport=udp addr=127.0.0.1:7777 pid=42 schema=1"
    ) == {
        "role": "server",
        "transport": "udp",
        "addr": "127.0.0.1:7777",
        "pid": "42",
        "schema": "1",
    }
    fields = parse_netstick_line("NETSTICK CONNECTED players=200 first=0 connect_s=0.512")
    assert fields["players"] == "200" and fields["connect_s"] == "0.512"


def test_free_port_is_free_for_tcp_and_udp() -> None:
    port = pick_free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", port))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", port))


def test_probe_loss_ratio() -> None:
    events = [
        {"event": "probes", "value": "100", "detail": "kind=net echoed=90 lost=8 inflight=2"},
        {"event": "probes", "value": "100", "detail": "kind=net echoed=98 lost=2 inflight=0"},
        {"event": "probes", "value": "50", "detail": "kind=app echoed=0 lost=50 inflight=0"},
        {"event": "connect", "value": "1.0", "detail": ""},
    ]
    assert probe_loss_ratio(events) == pytest.approx(0.05)
    assert probe_loss_ratio(events, "app") == 1.0
    assert probe_loss_ratio(events, "lib") is None


def test_run_with_fake_prototype(fake_binary: Path, tmp_path: Path) -> None:
    cpu = min(os.sched_getaffinity(0))
    cfg = config(fake_binary, tmp_path / "run", pin_server_cpu=cpu, pin_client_cpu=cpu)
    res = run_local(cfg)
    assert res.ok, res.error
    assert (res.server_exit_code, res.client_exit_code) == (0, 0)
    assert res.players_connected == 3 and res.server_players_max == 3
    assert res.connect_s is not None and 0 <= res.connect_s < 2
    # 3 players x 20 Hz over the 1.2 s window: about 72 probes.
    assert 40 <= res.rtt_samples <= 90
    assert res.rtt_p50_us is not None and 0 < res.rtt_p50_us <= res.rtt_p99_us  # type: ignore[operator]
    assert res.send_late_p99_us is not None
    assert res.server_cpu_cores is not None and res.client_cpu_cores is not None
    assert res.server_rss_bytes and res.client_rss_bytes
    assert res.probe_loss_ratio == 0.0
    assert res.pinned_cpus == {"server": [cpu], "client-0": [cpu]}
    assert res.contract_violations == []
    assert (tmp_path / "run" / "monitor.csv").is_file()
    assert "NETSTICK READY" in (tmp_path / "run" / "server.stdout.log").read_text()


def test_server_never_ready_fails_clearly(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "never-ready")
    cfg = config(fake_binary, tmp_path / "run", ready_timeout_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(LocalRunError) as exc:
        run_local(cfg)
    assert time.monotonic() - t0 < 5
    message = str(exc.value)
    assert "did not print 'NETSTICK READY ...' within 1 s" in message
    assert "pretending the listener cannot start" in message  # the server's stderr tail
    assert not _processes_running(str(fake_binary))


def test_server_exiting_early_fails_at_once(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "bad-args")
    t0 = time.monotonic()
    with pytest.raises(LocalRunError, match="exited with code 2 before printing") as exc:
        run_local(config(fake_binary, tmp_path / "run"))
    assert time.monotonic() - t0 < 3  # no waiting for the 10 s readiness timeout
    assert "unknown transport" in str(exc.value)


def test_client_failure_is_a_result_not_a_crash(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "client-fail")
    res = run_local(config(fake_binary, tmp_path / "run"))
    assert not res.ok
    assert res.client_exit_code == 4 and res.server_exit_code == 0
    assert res.error is not None and "player 0 could not connect" in res.error


def test_whole_process_group_is_killed(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "helper.pid"
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "helper")
    monkeypatch.setenv("FAKE_PROTOTYPE_HELPER_PID", str(pid_file))
    res = run_local(config(fake_binary, tmp_path / "run", duration_s=0.5, warmup_s=0.0))
    assert res.ok, res.error
    helper_pid = int(pid_file.read_text())
    # The helper ignores SIGTERM; the harness's SIGKILL of the group must have reached it.
    deadline = time.monotonic() + 2
    while psutil.pid_exists(helper_pid) and time.monotonic() < deadline:
        proc = psutil.Process(helper_pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.05)
    assert (
        not psutil.pid_exists(helper_pid)
        or psutil.Process(helper_pid).status() == psutil.STATUS_ZOMBIE
    )


def test_stdout_before_ready_is_a_violation(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "chatty")
    res = run_local(config(fake_binary, tmp_path / "run", duration_s=0.3, warmup_s=0.0))
    assert res.contract_violations == [
        "server stdout: 'starting up' was printed before the READY line"
    ]


def test_missing_binary(tmp_path: Path) -> None:
    with pytest.raises(LocalRunError, match="go build"):
        run_local(config(tmp_path / "nope", tmp_path / "run"))


def _processes_running(needle: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(needle in part for part in cmdline):
            found.append(proc.pid)
    return found
