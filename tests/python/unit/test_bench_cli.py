"""The benchmarks' shared record writer and formatter (workflow.bench.record), their targets
(workflow.bench.targets) and the bench registry. (bench-prototypes and the demo through the
harness: e2e/run/test_bench_runs.py.)"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from stats import runs_table
from workflow.bench import BENCHES, cells, record, targets
from workflow.bench import module as bench_module
from workflow.bench import prototypes as bench
from workflow.harness.state import Outcome

from support.paths import REPO


def rec(transport: str, players: int, **metrics: Any) -> dict[str, Any]:
    return {"transport": transport, "players": players, "ok": True, "error": None} | metrics


def test_targets_measured_and_judged() -> None:
    records = [
        rec("udp", 50, rtt_p50_us=80.0, connect_s=0.1),
        rec("udp", 200, players_per_client_core=1200.0, send_late_p99_us=600.0, connect_s=0.5),
        rec("tcp", 200, players_per_client_core=400.0, send_late_p99_us=100.0, connect_s=2.5),
        {"transport": "ws", "players": 200, "ok": False, "error": "exit 4\nmore"},
    ]
    judged = targets.evaluate_targets(records, bench.TARGETS)
    by = {(t["target"], t["transport"]): t for t in judged}
    assert by[("udp_rtt_p50", "udp")]["pass"] is True
    assert by[("udp_rtt_p50", "udp")]["measured"] == 80.0
    assert by[("players_per_client_core", "udp")]["pass"] is True
    assert "players / client_cpu_cores" in by[("players_per_client_core", "udp")]["note"]
    assert by[("players_per_client_core", "tcp")]["pass"] is False
    assert by[("send_late_p99", "udp")]["pass"] is False
    assert by[("send_late_p99", "tcp")]["pass"] is True
    assert by[("connect_time", "tcp")]["pass"] is False
    assert by[("connect_time", "ws")]["pass"] is False
    assert by[("connect_time", "ws")]["note"] == "cell failed: exit 4"
    assert ("connect_time", "kcp") not in by  # kcp was not part of this matrix


def test_target_rows_judge_each_metric_and_fail_a_missing_one() -> None:
    rows = targets.target_rows(
        {"a_s": 2.0, "b": 5.0},
        {"a_s": ("<=", 3.0, "fast"), "b": (">=", 6.0, "big"), "c": ("<=", 1.0, "absent")},
    )
    assert [(r["metric"], r["pass"]) for r in rows] == [("a_s", True), ("b", False), ("c", False)]
    assert rows[2]["measured"] is None
    with pytest.raises(ValueError, match="'<'"):
        targets.passes("<", 1.0, 0.5)


def test_targets_markdown_shows_measured_required_verdict() -> None:
    rows = targets.evaluate_targets(
        [rec("udp", 50, rtt_p50_us=86.44), rec("tcp", 200, connect_s=2.5)], bench.TARGETS
    )
    table = targets.targets_markdown(rows).splitlines()
    assert table[0] == "| target | transport | players | measured | required | verdict |"
    assert table[1] == "|---|---|---:|---:|---:|---|"
    assert "| rtt_p50_us | udp | 50 | 86.44 | <= 100 | pass |" in table
    assert "| connect_s | tcp | 200 | 2.5 | <= 2 | **fail** |" in table
    unscoped = targets.targets_markdown(targets.target_rows({}, {"x_s": ("<=", 1.0, "")}))
    assert unscoped.splitlines()[2] == "| x_s | not measured | <= 1 | **fail** |"


def test_records_markdown_is_the_readme_table() -> None:
    ok = rec(
        "tcp", 50, connect_s=0.098, rtt_p50_us=87.6, rtt_p99_us=540.2, send_late_p99_us=190.6,
        server_cpu_cores=0.1242, client_cpu_cores=0.1674, players_per_client_core=298.7,
        server_rss_bytes=22_396_928, client_rss_bytes=21_553_152, probe_loss_ratio=0.0,
    )  # fmt: skip
    failed = {"transport": "ws", "players": 200, "ok": False, "error": "not_ready: a | b\nx"}
    lines = record.records_markdown([ok, failed]).splitlines()
    assert lines[0].startswith("| transport | players | connect s | RTT p50 µs |")
    assert lines[1] == "|---|" + "|".join(["---:"] * 11) + "|"
    assert lines[2] == (
        "| tcp | 50 | 0.10 | 88 | 540 | 191 | 0.124 | 0.167 | 299 | 22.4 | 21.6 | 0.00 |"
    )
    assert lines[3].startswith("| ws | 200 | failed: not_ready: a / b | — |")


def test_text_table_is_aligned() -> None:
    text = record.text_table(
        ["transport", "players", "connect_s"], [["tcp", "20", "0.039"], ["webrtc", "200", "—"]]
    )
    lines = text.splitlines()
    assert lines[0] == "transport  players  connect_s"
    assert lines[2] == "tcp             20      0.039"
    assert lines[3] == "webrtc         200          —"


def test_every_bench_of_the_registry_has_its_options_and_main() -> None:
    import importlib
    import subprocess
    import sys

    for name in BENCHES:
        module = importlib.import_module(bench_module(name))
        assert callable(module.arguments) and callable(module.main), name
    # Building netstick's parser loads no bench: each bench's module adds its options when
    # that bench is parsed.
    code = (
        "import sys; from workflow.cli.main import build_parser; "
        "build_parser().parse_args(['bench', 'show', 'x.json']); "
        "print(','.join(sorted(m for m in sys.modules if m.startswith('workflow.bench.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.strip().split(","))
    assert "workflow.bench.show" in loaded and "workflow.bench.prototypes" not in loaded


def test_connect_time_is_the_slowest_client_of_meta_json() -> None:
    meta = {"connect_s": {"client-0": 0.25, "client-1": 0.5, "client-2": None}}
    assert runs_table.connect_s(meta) == 0.5
    assert runs_table.connect_s({}) is None


def test_write_adds_schema_provenance_and_relative_paths(tmp_path: Path) -> None:
    out = tmp_path / "bench" / "x.json"
    doc = record.write(out, "bench-x", {"run_dir": f"{REPO}/data/raw/x", "v": 1.5}, prov={"k": 1})
    on_disk = json.loads(out.read_text())
    assert on_disk == doc
    assert list(doc)[:3] == ["schema", "benchmark", "provenance"]
    assert doc["schema"] == record.RESULT_SCHEMA and doc["benchmark"] == "bench-x"
    assert doc["run_dir"] == "data/raw/x"
    with pytest.raises(ValueError):  # a statistic that could not be computed is null, not NaN
        record.write(out, "bench-x", {"v": math.nan}, prov={})
    assert json.loads(out.read_text()) == doc  # the failed write left the old file whole


def test_an_interrupted_run_stops_the_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run the harness stopped on SIGINT or SIGTERM stops the bench with 128 + signal instead
    of starting the next run (what was measured is written after every cell)."""

    def interrupted(cell: dict[str, Any], out: Path) -> Outcome:
        return Outcome("failed", "interrupted", "harness got 2", out, interrupted_by=2)

    monkeypatch.setattr(cells, "run_cell", interrupted)
    cell = cells.bench_cell("tcp", 2, 1, duration_s=1.0, pin=False)
    with pytest.raises(SystemExit) as stopped:
        cells.run_one(cell, tmp_path / "r1")
    assert stopped.value.code == 130
