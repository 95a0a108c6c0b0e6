"""workflow.cli.bench.prototypes, workflow.cli.bench.demo and the CLI, with synthetic records and the fake prototype."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workflow.cli.bench import prototypes as bench
from workflow.cli.bench.demo import format_table
from workflow.cli.main import main as cli_main


def rec(transport: str, players: int, **metrics: Any) -> dict[str, Any]:
    return {"transport": transport, "players": players, "ok": True, "error": None} | metrics


def test_targets_measured_and_judged() -> None:
    records = [
        rec("udp", 50, rtt_p50_us=80.0, connect_s=0.1),
        rec("udp", 200, players_per_client_core=800.0, send_late_p99_us=600.0, connect_s=0.5),
        rec("tcp", 200, players_per_client_core=400.0, send_late_p99_us=100.0, connect_s=2.5),
        {"transport": "ws", "players": 200, "ok": False, "error": "exit 4\nmore"},
    ]
    targets = {(t["target"], t["transport"]): t for t in bench.evaluate_targets(records)}
    assert targets[("udp_rtt_p50", "udp")]["pass"] is True
    assert targets[("udp_rtt_p50", "udp")]["measured"] == 80.0
    assert targets[("players_per_client_core", "udp")]["pass"] is True
    assert "players / client_cpu_cores" in targets[("players_per_client_core", "udp")]["note"]
    assert targets[("players_per_client_core", "tcp")]["pass"] is False
    assert targets[("send_late_p99", "udp")]["pass"] is False
    assert targets[("send_late_p99", "tcp")]["pass"] is True
    assert targets[("connect_time", "tcp")]["pass"] is False
    assert targets[("connect_time", "ws")]["pass"] is False
    assert targets[("connect_time", "ws")]["note"] == "cell failed: exit 4"
    assert ("connect_time", "kcp") not in targets  # kcp was not part of this matrix


def test_table_is_aligned() -> None:
    text = format_table(
        [["tcp", "20", "0.039"], ["webrtc", "200", "-"]],
        header=["transport", "players", "connect_s"],
    )
    lines = text.splitlines()
    assert lines[0] == "transport  players  connect_s"
    assert lines[2] == "tcp             20      0.039"
    assert lines[3] == "webrtc         200          -"


def test_bench_with_fake_prototype_writes_json(fake_binary: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench" / "prototypes.json"
    rc = cli_main(
        [
            "bench-prototypes",
            "--transports",
            "tcp,udp",
            "--players",
            "2",
            "--duration-s",
            "0.6",
            "--warmup-s",
            "0.1",
            "--out",
            str(out),
            "--raw-dir",
            str(tmp_path / "raw"),
            "--binary",
            str(fake_binary),
            "--no-pin",
        ]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    assert [r["transport"] for r in doc["records"]] == ["tcp", "udp"]
    tcp = doc["records"][0]
    assert tcp["ok"] and tcp["rtt_p50_us"] > 0 and tcp["players_per_client_core"] is not None
    assert tcp["commands"]["server"].startswith(str(fake_binary))
    for key in ("git", "go_version", "kernel", "cpu_model", "cpu_count", "timestamp_utc"):
        assert key in doc["provenance"]
    assert doc["config"]["players"] == [2]
    assert doc["targets"] == []  # no 50/200-player cells in this matrix


def test_cli_rejects_unknown_transport(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli_main(["demo", "--transports", "tcp,carrier-pigeon"])
    assert exc.value.code == 2
    assert "carrier-pigeon" in capsys.readouterr().err


def test_cli_missing_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["demo", "--binary", str(tmp_path / "nope")]) == 2
    assert "go build" in capsys.readouterr().err
