"""A run whose server froze, or whose players all fell silent, inside the window is never a
silent ok: stats.stalls measures the gaps, the runs table carries them, the comparisons leave the
run out and name it, and the findings say so."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from report import sentences, tables
from stats import analyse, comparisons, stalls
from stats.window import Window

S = 1_000_000_000


def _ticks(
    start_s: float, end_s: float, hz: float = 60.0, hole: tuple[float, float] | None = None
) -> list[int]:
    t = np.arange(start_s, end_s, 1 / hz)
    if hole is not None:
        t = t[(t < hole[0]) | (t >= hole[1])]
    return [int(x * S) for x in t]


WINDOW = Window(10 * S, 35 * S)


def test_a_server_frozen_for_15_s_is_stalled_and_says_why() -> None:
    ticks = _ticks(5, 40, hole=(15, 30))  # SIGSTOP from 15 s to 30 s of a 10-35 s window
    probes = _ticks(5, 40, hz=10, hole=(15, 30))
    got = stalls.measure(ticks, probes, WINDOW, "probe:10")
    assert got["stalled"] is True
    assert 14.9 < got["tick_gap_max_s"] <= 15.1 and 14.9 < got["probe_silence_max_s"] <= 15.1
    assert got["stall_reason"].startswith("no server tick for 15.0")
    assert "no probe of any player answered for 15.1" in got["stall_reason"]
    assert got["stall_reason"].endswith("inside the window (bound 1 s)")


def test_a_steady_run_is_not_stalled() -> None:
    got = stalls.measure(_ticks(5, 40), _ticks(5, 40, hz=10), WINDOW, "probe:10")
    assert got["stalled"] is False and got["stall_reason"] is None
    assert got["tick_gap_max_s"] < 0.02 and got["probe_silence_max_s"] < 0.11


def test_silence_at_the_window_edge_counts() -> None:
    # The server stops for good 3 s before the window ends: the gap to the window's end counts.
    got = stalls.measure(_ticks(5, 32), _ticks(5, 40, hz=10), WINDOW, "probe:10")
    assert got["stalled"] is True and 2.9 < got["tick_gap_max_s"] < 3.1


def test_pingpong_and_probes_off_are_not_judged_by_silence() -> None:
    quiet = _ticks(5, 12, hz=10)  # pingpong done after 2 s of the window
    assert stalls.measure(_ticks(5, 40), quiet, WINDOW, "pingpong")["probe_silence_max_s"] is None
    assert stalls.measure(_ticks(5, 40), [], WINDOW, "none")["stalled"] is False
    assert stalls.measure(None, quiet, WINDOW, "stream")["stalled"] is True  # a stream must flow
    assert stalls.measure(None, [], WINDOW, "none")["stalled"] is None  # nothing to judge by


def _runs() -> pl.DataFrame:
    rows = []
    for t, base in (("tcp", 50.0), ("kcp", 200.0)):
        for k in range(1, 7):
            stalled = t == "kcp" and k == 6
            rows.append(
                {"cell_id": f"c-{t}", "run_id": f"r{k}", "transport": t, "status": "ok",
                 "prototype": "reference", "players": 20, "workload": "active", "params": "{}",
                 "network_profile": "lan", "duration_s": 25.0, "library_version": "pinned",
                 "rtt_net_p50_us": 2_500_000.0 if stalled else base + k,
                 "server_cpu_cores": 0.1, "tick_rate_hz": 60.0, "profile_rtt_us": 0.0,
                 "stalled": stalled, "tick_gap_max_s": 15.0 if stalled else 0.02,
                 "probe_silence_max_s": 15.0 if stalled else 0.1,
                 "stall_reason": "no server tick for 15.00 s inside the window (bound 1 s)"
                 if stalled else None}
            )  # fmt: skip
    return pl.DataFrame(rows)


def test_a_stalled_run_is_left_out_of_comparisons_named_and_said() -> None:
    runs = _runs()
    comps = comparisons.comparisons(runs)
    row = comps.filter(pl.col("metric") == "rtt_net_p50_us").row(0, named=True)
    assert row["n_a"] == 5 and row["alt_n_a"] == 6  # kcp is a (alphabetical): 5 used
    named = json.loads(row["suspects"])
    assert [(s["run"], s["why"]) for s in named] == [("c-kcp/r6", "stalled")]
    found = analyse.findings(runs, analyse.cells(runs), comps)
    [said] = [sentences.sentence(f) for f in found if f["kind"] == "stalled"]
    assert said.startswith("1 of 12 ok runs stalled inside their window")
    assert "c-kcp/r6 (no server tick for 15 s; no probe answered for 15 s)" in said
    table = tables.interference_table(runs)
    assert table["run"].to_list() == ["c-kcp/r6"]
    assert table["reason"][0].startswith("no server tick for 15.00 s")
