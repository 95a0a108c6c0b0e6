"""A cell whose server runs under callgrind (server_profiler callgrind): the harness counts the
server's instructions over the window alone, the runs table divides them by the messages the
server handled between the switches, and two identical runs agree within 2 %.

The load is small and fixed (the stream workload: 20 players x 30 Hz, echoed), one callgrind
keeps up with (`netstick bench noise`); two 4 s runs take ~11 s here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitors import callgrind
from stats import runs_table
from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.marks import needs_reference_binary, needs_valgrind

AGREE = 0.02  # two identical runs' instructions per message


def _cell(run_id: str) -> dict[str, Any]:
    cell = cells.validate(
        {
            "prototype": "prototypes/reference/prototype.yaml",
            "transport": "tcp",
            "players": 20,
            "workload": "stream",
            "params": {"size": 100, "rate": 30},
            "network_profile": "lan",
            "placement": "local",
            "duration_s": 4.0,
            "run_id": run_id,
            "seed": 1,
            "server_profiler": "callgrind",
        }
    )
    cell.setdefault("cell_id", layout.derive_cell_id(cell))
    return cell


def _measured(out: Path, run_id: str) -> dict[str, Any]:
    res = harness.run_cell(_cell(run_id), out / run_id)
    assert res.status == "ok", res.detail
    data = runs_table.read_run_dir(res.path)
    assert not data.unread, data.unread
    profiler = data.meta["server_profiler"]
    assert profiler["tool"] == "callgrind" and profiler["valgrind"].startswith("valgrind")
    # Zeroed when the window opened, dumped when it closed: the switches bracket the window.
    window = data.window
    assert window.start_unix_ns is not None and window.end_unix_ns is not None
    assert window.start_unix_ns <= profiler["on_unix_ns"] < window.end_unix_ns
    assert window.end_unix_ns <= profiler["off_unix_ns"] <= profiler["off_done_unix_ns"]
    assert data.server_instructions == callgrind.read_instructions(res.path)
    return runs_table.measure(data)


@needs_reference_binary
@needs_valgrind
def test_a_callgrind_cell_counts_instructions_per_message_that_repeat(tmp_path: Path) -> None:
    first, second = _measured(tmp_path, "r1"), _measured(tmp_path, "r2")
    for row in (first, second):
        assert row["server_profiler"] == "callgrind"
        assert row["server_instr_per_msg"] > 0, row
        # Every runs-table metric of the run is still there, the CPU per message among them.
        assert row["server_cpu_us_per_msg"] > 0 and row["rtt_net_p50_us"] > 0, row
    a, b = first["server_instr_per_msg"], second["server_instr_per_msg"]
    assert abs(a / b - 1) <= AGREE, (a, b)
