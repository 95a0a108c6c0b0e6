"""Smoke test of the Go reference prototype through the harness (skipped until it is built)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import needs_reference_binary

from prototypes.contract.checklogs import check_log_dir
from stats.runs_table import read_run_dir
from workflow.bench.cells import measure
from workflow.harness import cell as cells
from workflow.harness.run import run_cell


@needs_reference_binary
def test_tcp_run_is_measured_and_logs_conform(tmp_path: Path) -> None:
    cell = cells.validate(
        {
            "cell_id": "ref-tcp",
            "prototype": "prototypes/reference/prototype.yaml",
            "transport": "tcp",
            "players": 5,
            "workload": "stream",
            "params": {"size": 100, "rate": 60},
            "duration_s": 1.5,
            "sample_interval_s": 0.25,
            "baseline_s": 0,
        }
    )
    outcome = run_cell(cell, tmp_path / "run")
    assert outcome.status == "ok", f"{outcome.reason}: {outcome.detail}"
    status = json.loads((outcome.path / "status.json").read_text())
    assert status["counts"]["players_connected"] == 5
    row = measure(read_run_dir(outcome.path))
    assert row["rtt_net_samples"] > 0 and row["rtt_net_p50_us"] > 0
    assert check_log_dir(outcome.path / "logs") == []
