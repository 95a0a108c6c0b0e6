"""Instructions counted by the CPU (server_profiler perf, monitors/perfcount.py): perf attached
to a live process and stopped by SIGINT gives its count over the span, and a cell asking for the
counter where the machine has none fails before anything starts, naming perf's answer.

A hardware instruction counter does not exist in this development VM, so the attach-count-stop
path is exercised with a software event perf counts everywhere (context switches); the counted
event itself is checked where counters exist (bare metal)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from monitors import perfcount
from stats import runs_table
from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.marks import needs_reference_binary

needs_perf = pytest.mark.skipif(
    perfcount.status("context-switches")["available"] is False, reason="perf cannot count here"
)
SLEEPER = "import time\nfor _ in range(400):\n    time.sleep(0.005)\n"


@needs_perf
def test_perf_attached_to_a_live_process_counts_until_sigint(tmp_path: Path) -> None:
    target = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        argv = perfcount.attach_command(target.pid, tmp_path / perfcount.OUT_FILE,
                                        "context-switches")  # fmt: skip
        perf = subprocess.Popen(argv, stderr=subprocess.PIPE)
        time.sleep(0.6)
        sent = perfcount.detach(perf)
        assert sent <= time.time_ns()
        # ~5 ms sleeps for most of 0.6 s: dozens of switches at least, from the attach on.
        assert 20 < perfcount.read_count(tmp_path, "context-switches") < 2000
        closed = r"exited with -?[0-9]+ before the window closed"
        with pytest.raises(perfcount.PerfError, match=closed):
            perfcount.detach(perf)
    finally:
        target.kill()
        target.wait()
    (tmp_path / "none").mkdir()
    with pytest.raises(FileNotFoundError):
        perfcount.read_count(tmp_path / "none")
    (tmp_path / "none" / perfcount.OUT_FILE).write_text("<not counted>,,instructions:u,0,0,,\n")
    with pytest.raises(ValueError, match="no count of instructions:u: <not counted>"):
        perfcount.read_count(tmp_path / "none")


@needs_reference_binary
def test_a_cell_asking_for_the_counter_runs_only_where_the_cpu_has_one(tmp_path: Path) -> None:
    cell = cells.validate(
        {
            "prototype": "prototypes/reference/prototype.yaml",
            "transport": "tcp",
            "players": 5,
            "workload": "active",
            "network_profile": "lan",
            "placement": "local",
            "duration_s": 2.0,
            "run_id": "r1",
            "seed": 1,
            "server_profiler": "perf",
        }
    )
    cell.setdefault("cell_id", layout.derive_cell_id(cell))
    status = perfcount.status()
    res = harness.run_cell(cell, tmp_path / "r1")
    if not status["available"]:
        # This VM: nothing started, the reason says what perf answered and what to use instead.
        assert (res.status, res.reason) == ("failed", "profiler_error"), res.detail
        assert status["reason"] in res.detail and "server_profiler callgrind" in res.detail
        return
    assert res.status == "ok", res.detail
    data = runs_table.read_run_dir(res.path)
    assert data.meta["server_profiler"]["tool"] == "perf" and data.server_instructions
    assert runs_table.measure(data)["server_instr_per_msg"] > 0
