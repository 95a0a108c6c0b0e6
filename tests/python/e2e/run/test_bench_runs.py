"""bench-prototypes and the demo through the harness with the fake prototype: the record a
bench writes, a failed run recorded and the bench going on, one demo row per transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow.bench import demo
from workflow.bench import prototypes as bench

from support.paths import FAKE_MANIFEST


def test_bench_through_the_harness_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench" / "prototypes.json"
    doc = bench.run(
        out,
        tmp_path / "raw",
        transports=["tcp"],
        players=[2],
        duration_s=0.8,
        repetitions=2,
        pin=False,
        prototype=FAKE_MANIFEST,
        progress=lambda _msg: None,
    )
    assert json.loads(out.read_text()) == doc
    (tcp,) = doc["records"]
    assert tcp["ok"], tcp["error"]
    assert tcp["summary"] == "median of 2 ok runs of 2"
    assert len(tcp["repetitions"]) == 2 and len(tcp["rtt_p50_us_runs"]) == 2
    assert tcp["rtt_p50_us"] > 0 and tcp["rtt_samples"] > 0
    for run in tcp["repetitions"]:
        assert run["players_per_client_core"] == pytest.approx(2 / run["client_cpu_cores"])
    assert tcp["connect_s"] is not None and tcp["players_connected"] == 2
    assert tcp["server_rss_bytes"] > 0 and tcp["client_rss_bytes"] > 0
    assert tcp["probe_loss_ratio"] == 0.0
    assert "fake_prototype.py" in tcp["commands"]["server"]
    for run in tcp["repetitions"]:  # each repetition is a complete harness record
        assert json.loads((Path(run["run_dir"]) / "status.json").read_text())["status"] == "ok"
    for key in ("git", "go_version", "kernel", "cpu_model", "cpu_count", "timestamp_utc"):
        assert key in doc["provenance"]
    assert doc["config"]["players"] == [2] and doc["config"]["pinning"] is None
    assert doc["targets"] == []  # no 50/200-player cells in this matrix


def test_bench_records_a_failed_run_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PROTOTYPE_MODE", "client-fail")
    doc = bench.run(
        tmp_path / "p.json",
        tmp_path / "raw",
        transports=["tcp"],
        players=[1, 2],
        duration_s=0.5,
        repetitions=1,
        pin=False,
        prototype=FAKE_MANIFEST,
        progress=lambda _msg: None,
    )
    assert [(r["players"], r["ok"]) for r in doc["records"]] == [(1, False), (2, False)]
    # The client exits with code 4 before its CONNECTED line: the harness names that exit.
    reasons = {r["error"].split(":")[0] for r in doc["records"]}
    assert reasons == {"client_exit"}, doc["records"]


def test_demo_prints_one_row_per_transport(tmp_path: Path) -> None:
    text, all_ok = demo.run(
        tmp_path / "demo",
        transports=["tcp"],
        players=2,
        duration_s=0.6,
        prototype=FAKE_MANIFEST,
        progress=lambda _msg: None,
    )
    assert all_ok, text
    header, _rule, row = text.splitlines()[:3]
    assert header.split()[:3] == ["transport", "players", "connect"]
    assert row.split()[:2] == ["tcp", "2"] and row.split()[-1] == "ok"
