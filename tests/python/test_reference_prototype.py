"""Smoke test of the Go reference prototype through the harness (skipped until it is built)."""

from __future__ import annotations

from pathlib import Path

from conftest import REFERENCE_BINARY, needs_reference_binary

from prototypes.contract.checklogs import check_log_dir
from workflow.cli.bench.localrun import RunConfig, run_local


@needs_reference_binary
def test_tcp_run_is_measured_and_logs_conform(tmp_path: Path) -> None:
    res = run_local(
        RunConfig(
            binary=REFERENCE_BINARY,
            transport="tcp",
            players=5,
            duration_s=1.5,
            warmup_s=0.5,
            run_dir=tmp_path / "run",
            sample_interval_s=0.25,
        )
    )
    assert res.ok, res.error
    assert res.players_connected == 5
    assert res.rtt_samples > 0 and res.rtt_p50_us is not None
    assert check_log_dir(tmp_path / "run" / "logs") == []
