"""A real run of the reference prototype beside a busy neighbour is flagged; the same run on
its own is not (stats/interference.py from the sampler's monitor.csv, as the stats stage reads
it). Both run through the emulator, which the harness samples as the run's own process.

The neighbour is a Python busy loop this test starts before the run and stops after it (it
also stops itself after BURN_MAX_S, should the test die in between)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from stats import interference, runs_table
from workflow import layout
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.marks import needs_netemu, needs_reference_binary, needs_root

BURN_MAX_S = 60
QUIET_ATTEMPTS = 3  # other processes on a shared machine are real neighbours: retried


def _cell(run_id: str) -> dict[str, Any]:
    cell = cells.validate(
        {
            "prototype": "prototypes/reference/prototype.yaml",
            "transport": "tcp",
            "players": 4,
            "workload": "stream",
            "params": {"size": 100, "rate": 30},
            "network_profile": "lan-emulated",
            "duration_s": 3.0,
            "sample_interval_s": 0.25,
            "connect_timeout_s": 15,
            "run_id": run_id,
            "seed": 1,
        }
    )
    cell.setdefault("cell_id", layout.derive_cell_id(cell))
    return cell


def _measured(out: Path, run_id: str) -> dict[str, Any]:
    res = harness.run_cell(_cell(run_id), out / run_id)
    assert res.status == "ok", res.detail
    data = runs_table.read_run_dir(res.path)
    assert not data.unread, data.unread
    assert data.monitor is not None
    procs = {s.proc for s in data.monitor}
    # The emulator is sampled as the run's, and the machine's steal beside the host.
    assert {"server", "client-0", "emulator", "host", "steal", "sampler"} <= procs, procs
    emulator_s = max(s.cpu_user_s + s.cpu_system_s for s in data.monitor if s.proc == "emulator")
    assert emulator_s > 0
    return runs_table.measure(data)


@needs_reference_binary
@needs_netemu
@needs_root
def test_a_run_beside_a_busy_loop_is_flagged_and_alone_it_is_not(tmp_path: Path) -> None:
    burner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time\nend = time.monotonic() + {BURN_MAX_S}\n"
            "while time.monotonic() < end:\n    pass\n",
        ]
    )
    try:
        busy = _measured(tmp_path, "beside-burner")
    finally:
        burner.kill()
        burner.wait()
    assert busy["interference"] is True, busy
    # One core of a two-core machine went to the loop.
    assert busy["others_cpu_cores"] > max(0.5, interference.OTHERS_MAX_CORES), busy
    assert busy["interference_reason"].startswith("others used "), busy

    quiet: list[dict[str, Any]] = []
    for k in range(QUIET_ATTEMPTS):
        quiet.append(_measured(tmp_path, f"alone-{k}"))
        if quiet[-1]["interference"] is False:
            break
    assert quiet[-1]["interference"] is False, quiet
    assert quiet[-1]["interference_reason"] is None
    assert quiet[-1]["others_cpu_cores"] <= interference.OTHERS_MAX_CORES
    assert quiet[-1]["steal_cores"] is not None
