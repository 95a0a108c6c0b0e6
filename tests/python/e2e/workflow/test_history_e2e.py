"""The nightly decision end to end on this machine, small: real nights of the reference
prototype through Snakemake and the network emulator (workflow/bench/history.py; the fuller
version is `netstick bench history`, data/bench/history.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workflow.bench import history as bench

pytestmark = pytest.mark.skipif(
    shutil.which("ip") is None, reason="the emulator needs iproute2 (network namespaces)"
)


def test_identical_nights_pass_and_an_emulated_delay_is_flagged_and_confirmed(
    tmp_path: Path,
) -> None:
    # Nights of 1 cell x 6 runs x 3 s: two identical, then one with 1 ms more one-way delay.
    doc = bench.validate(
        tmp_path, transports=("tcp",), repetitions=6, duration_s=3.0, identical_nights=2
    )
    m = doc["measured"]
    assert m["identical_nights_decided_cells"] == 1
    # Night 2 has one baseline night, whose spread from night to night is unknown: decided,
    # never suspected (nights differ more than runs within a night do).
    assert m["identical_nights_suspected_cells"] == 0
    assert m["identical_nights_confirmed_cells"] == 0
    assert m["delay_night_suspected_cells"] == 1
    assert m["delay_night_cells_confirmed_share"] == 1.0
    # 2 ms more RTT on a loopback RTT of a fraction of a millisecond
    assert m["delay_night_ratio_min"] > 2.0
    decision = tmp_path / "decisions" / "night-3" / "regressions.json"
    saved = json.loads(decision.read_text())
    [cell] = saved["cells"]
    assert cell["suspected"] and cell["confirmed"] and cell["interval"][0] > 1.05
    # The re-run ran as a campaign of its own: just the suspected cell, 6 runs.
    confirm_dir = tmp_path / f"confirm-{saved['night_id']}"
    [confirm_file] = confirm_dir.glob("history-check-confirm-*.yaml")
    raw = confirm_dir / "data" / "raw" / confirm_file.stem
    assert len(list(raw.glob("*/r*/meta.json"))) == 6
    # Each night is one file in the history, the delayed one filed under the campaign's cells.
    files = sorted((tmp_path / "history" / bench.NAME).glob("*.csv"))
    assert len(files) == 3
    assert (decision.parent / "night-trends.csv").is_file()  # what the report draws
