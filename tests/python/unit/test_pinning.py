"""CPU pinning as the cell states it: the key cpu_pinning per role, and its refusal under SLURM
placement (where SLURM places the processes)."""

from __future__ import annotations

import os

import pytest

from workflow.harness import cell as cells
from workflow.harness import pinning

ONE_CPU = sorted(os.sched_getaffinity(0))[-1]


def test_cell_schema_takes_cpu_lists_per_role_and_no_warmup_key() -> None:
    base = {"prototype": "p", "transport": "tcp", "players": 1, "workload": "idle"}
    cell = cells.validate({**base, "duration_s": 1, "cpu_pinning": {"server": [0], "clients": [1]}})
    assert cell["cpu_pinning"] == {"server": [0], "clients": [1]}
    assert "cpu_pinning" not in cells.validate({**base, "duration_s": 1})  # absent: no pinning
    for bad, named in (
        ({"server": []}, "cpu_pinning.server"),
        ({"server": [-1]}, "cpu_pinning.server.0"),
        ({"sampler": [0]}, "sampler"),
    ):
        with pytest.raises(cells.CellError, match=named):
            cells.validate({**base, "duration_s": 1, "cpu_pinning": bad})
    with pytest.raises(cells.CellError, match="warmup_s"):
        cells.validate({**base, "duration_s": 1, "warmup_s": 2})


def test_pinning_is_refused_under_slurm_placement() -> None:
    with pytest.raises(pinning.PinningError, match="cpu_pinning: not available with placement"):
        pinning.check({"server": [ONE_CPU]}, "slurm")
    assert pinning.check(None, "slurm") == {}
