"""apache-otava's own command line (.tools/otava, pinned by requirements-otava.txt) reads the
series and configuration `netstick history show --otava-csv` writes, and finds the step."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stats.history.store import import_night
from workflow.harness.environment import this_machine

from support.history_nights import STORE_CELLS, night_results, night_runs
from support.paths import NETSTICK, REPO

OTAVA = REPO / ".tools" / "otava" / "bin" / "otava"


@pytest.mark.skipif(
    not OTAVA.exists(),
    reason="needs apache-otava's CLI in .tools/otava (workflow/tools/install-otava.sh; make test)",
)
def test_apache_otava_reads_a_cell_series_and_finds_its_step(tmp_path: Path) -> None:
    """`netstick history show --otava-csv` writes a series and configuration that apache-otava's
    own command line reads (its CSV source, dateparser's time parsing) and analyses: a cell whose
    last three of eight nights are 30 % slower has one change point there, the others none."""
    hist = tmp_path / "history"
    for i in range(8):
        slow = {STORE_CELLS[0]: 1.3} if i >= 5 else None
        res = night_results(tmp_path / f"n{i}", "nightly", night_runs(slow, seed=i))
        import_night(res, hist, time_utc=f"2026-11-1{i}T02:00:00+00:00", machine=this_machine())
    printed = {}
    for cell in STORE_CELLS[:2]:
        csv = tmp_path / f"{cell}.csv"
        shown = subprocess.run(
            [str(NETSTICK), "history", "show", "nightly", "--cell", cell, "--otava-csv", str(csv),
             "--history-dir", str(hist)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        config = csv.with_suffix(".otava.yaml")
        analysed = subprocess.run(
            [str(OTAVA), "analyze", cell], capture_output=True, text=True, check=False,
            env={"OTAVA_CONFIG": str(config), "PATH": "/usr/bin:/bin"}, cwd=tmp_path,
        )  # fmt: skip
        assert analysed.returncode == 0, analysed.stdout + analysed.stderr
        printed[cell] = analysed.stdout
    slow_rows = printed[STORE_CELLS[0]].splitlines()
    assert sum("2026-11-1" in line for line in slow_rows) == 8  # every night read
    # otava prints a change point as a row of its relative change between two nights
    steps = [line for line in slow_rows if "%" in line]
    assert len(steps) == 1 and "+" in steps[0], printed[STORE_CELLS[0]]
    marker = slow_rows.index(steps[0])
    assert "2026-11-15" in "".join(slow_rows[marker : marker + 3])  # the first slow night follows
    assert "%" not in printed[STORE_CELLS[1]], printed[STORE_CELLS[1]]
