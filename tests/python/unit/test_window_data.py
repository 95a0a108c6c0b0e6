"""An ok run's window must hold the data its cell promises (workflow/harness/window_data.py):
an answered net probe where the cell has probes, a server tick, and a sample of the server when
the window spans two sampling intervals. Timestamps in µs, a server that logged no tick in the
window and a sampler that stopped are each named, with where the first row lay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitors.sampler import CSV_COLUMNS, MONITOR_CSV, Sample
from prototypes.contract.columns import RTT_COLUMNS, TICKS_COLUMNS
from workflow.harness import window_data

START = 1_800_000_000 * 10**9
END = START + 4 * 10**9
CELL: dict[str, Any] = {"workload": "idle", "params": {}, "sample_interval_s": 0.5}


def _run(
    d: Path, *, rtt_ns: int = START + 10**9, tick_ns: int = START + 10**9, sample: bool = True
) -> Path:
    (d / "logs").mkdir(parents=True)
    rows = [f"{rtt_ns + k * 10**8},0,{k},80.5,net,1.0" for k in range(5)]
    (d / "logs" / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rows]) + "\n")
    ticks = [f"{tick_ns + k * 16_666_667},{k},1.0,20.0,1,1,2,2,40,40" for k in range(5)]
    (d / "logs" / "server.ticks.csv").write_text(
        "\n".join([",".join(TICKS_COLUMNS), *ticks]) + "\n"
    )
    samples = [Sample(START - 10**9, "server", 0.1, 0.0, 0.1, 1000, 4)]
    if sample:
        samples.append(Sample(START + 2 * 10**9, "server", 0.2, 0.0, 0.1, 1000, 4))
    (d / MONITOR_CSV).write_text(
        ",".join(CSV_COLUMNS) + "\n" + "".join(s.csv_line() for s in samples)
    )
    return d


def test_a_window_with_every_metric_passes(tmp_path: Path) -> None:
    assert window_data.problem(CELL, _run(tmp_path), (START, END)) is None


def test_timestamps_in_microseconds_leave_no_rtt_row_in_the_window(tmp_path: Path) -> None:
    d = _run(tmp_path, rtt_ns=START // 1000)
    found = window_data.problem(CELL, d, (START, END))
    assert found is not None and found.startswith("0 of 5 RTT rows of kind net lie inside"), found
    assert "before the window's start" in found and "nanoseconds" in found


def test_no_server_tick_in_the_window_is_named(tmp_path: Path) -> None:
    d = _run(tmp_path, tick_ns=END + 10**9)
    found = window_data.problem(CELL, d, (START, END))
    assert found is not None
    assert found.startswith("0 of 5 server tick rows (server.ticks.csv) lie inside"), found
    assert "1 s after its end" in found


def test_a_sampler_that_stopped_is_named(tmp_path: Path) -> None:
    d = _run(tmp_path, sample=False)
    found = window_data.problem(CELL, d, (START, END))
    assert found is not None and "0 of 1 samples of the server (monitor.csv)" in found, found
    # A window shorter than two sampling intervals may fall between samples: not judged.
    assert window_data.problem(CELL, d, (START + 10**9, START + 19 * 10**8)) is None
