"""Interference detection: what else used the machine in a run's window (stats/interference.py)
from the sampler's rows (monitors/sampler.py), the thresholds, and what the campaign analysis,
the report and the nightly's decisions do with a flagged run. (A real run beside a real busy
loop: e2e/run/test_interference_e2e.py.)"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import polars as pl
import pytest

from monitors.sampler import (
    CSV_COLUMNS,
    HOST,
    MONITOR_CSV,
    SAMPLER,
    STEAL,
    Sample,
    Sampler,
    node_csv,
    read_monitor,
    read_samples,
)
from report import history as history_report
from report import sentences, tables
from stats import analyse, interference
from stats.history.decide import confirm, decide, write_decision
from stats.history.store import import_night, night_table, read_history
from stats.window import Window
from workflow.harness.environment import this_machine

from support.history_nights import night_results, night_runs

S = 1_000_000_000  # ns per s
T0 = 1_700_000_000 * S


def _tree(proc: str, cores: float, seconds: int = 11, t0: int = T0, start_s: float = 100.0):
    """Cumulative rows of a process using `cores` steadily, one per second from t0."""
    return [
        Sample(t0 + k * S, proc, start_s + cores * k, 0.0, cores, 1000, 2) for k in range(seconds)
    ]


def _run_rows(others: float, steal: float = 0.0, client_stops_at: int = 11) -> list[Sample]:
    """A run's rows over 10 s: server 0.5 cores, a client 0.3 (exiting after client_stops_at
    samples), the emulator 0.2, the sampler 0.02, a neighbour `others` and steal: the host is
    busy with all of them but the steal."""
    rows = [
        *_tree("server", 0.5),
        *_tree("client-0", 0.3, seconds=client_stops_at),
        *_tree("emulator", 0.2),
        *_tree(SAMPLER, 0.02),
    ]
    # The client's CPU after it stopped being sampled is none (it exited): the host saw only
    # what it used up to then.
    host = []
    for k in range(11):
        client_s = 0.3 * min(k, client_stops_at - 1)
        busy_s = 5000.0 + (0.5 + 0.2 + 0.02 + others) * k + client_s
        host.append(Sample(T0 + k * S, HOST, busy_s, 0.0, 0.0, 10**9, None))
    rows += host + _tree(STEAL, steal)
    return rows


WINDOW = Window(T0, T0 + 10 * S + 1)


def test_others_is_the_host_minus_the_runs_trees_the_emulator_and_the_sampler() -> None:
    got = interference.measure(_run_rows(others=0.05), WINDOW, {})
    assert got.others_cpu_cores == pytest.approx(0.05)
    assert got.steal_cores == pytest.approx(0.0)
    assert got.interference is False and got.reason is None
    # A client that exited early keeps its last reading: not taken for a neighbour.
    early = interference.measure(_run_rows(others=0.05, client_stops_at=8), WINDOW, {})
    assert early.others_cpu_cores == pytest.approx(0.05)


def test_the_emulator_counts_as_the_run_and_only_rows_in_the_window_count() -> None:
    rows = _run_rows(others=0.0)
    without = [r for r in rows if r.proc != "emulator"]
    # Without its own rows the emulator's 0.2 cores would be a neighbour's.
    assert interference.measure(without, WINDOW, {}).others_cpu_cores == pytest.approx(0.2)
    # A neighbour before the window is not one during it: only the window's samples count.
    late = Window(T0 + 5 * S, T0 + 10 * S + 1)
    burst = [
        Sample(r.t_unix_ns, r.proc, r.cpu_user_s + (3.0 if r.t_unix_ns <= T0 + 4 * S else 4.0),
               r.cpu_system_s, r.cpu_cores, r.rss_bytes, r.num_threads)
        if r.proc == HOST and r.t_unix_ns > T0 else r
        for r in rows
    ]  # fmt: skip
    assert interference.measure(burst, late, {}).others_cpu_cores == pytest.approx(0.0)
    assert interference.measure(burst, WINDOW, {}).others_cpu_cores == pytest.approx(0.4)


def test_a_busy_neighbour_or_steal_flags_the_run_with_the_numbers() -> None:
    busy = interference.measure(_run_rows(others=0.62), WINDOW, {})
    assert busy.interference is True
    assert busy.reason == (
        f"others used 0.62 cores on average (threshold {interference.OTHERS_MAX_CORES:g})"
    )
    stolen = interference.measure(_run_rows(others=0.0, steal=0.4), WINDOW, {})
    assert stolen.interference is True and "stole 0.40 cores" in str(stolen.reason)
    assert stolen.columns() == {
        "others_cpu_cores": 0.0,
        "steal_cores": 0.4,
        "interference": True,
        "interference_reason": stolen.reason,
    }
    # No samples in the window: neither flagged nor cleared.
    none = interference.measure(_run_rows(0.9), Window(T0 - 5 * S, T0), {})
    assert none == interference.Interference(None, None, None, None)


def test_thresholds_sit_between_the_measured_floor_and_a_one_core_burner() -> None:
    floor, limit = interference.OTHERS_FLOOR_CORES, interference.OTHERS_MAX_CORES
    assert floor < limit < 0.8  # a one-core busy loop showed 0.8-1.2 cores here
    assert interference.judge(floor, 0.0) == (False, None)
    assert interference.judge(limit, interference.STEAL_MAX_CORES) == (False, None)
    flagged, why = interference.judge(limit + 0.01, interference.STEAL_MAX_CORES + 0.01)
    assert flagged is True and why is not None and "; the hypervisor stole" in why
    assert interference.judge(None, None) == (None, None)
    assert interference.judge(None, 0.0) == (False, None)  # steal alone still clears


def test_the_sampler_records_steal_and_reserves_its_row_names(tmp_path: Path) -> None:
    out = tmp_path / MONITOR_CSV
    with Sampler({}, out, interval_s=0.05):
        time.sleep(0.3)
    rows = read_samples(out)
    steal = [r for r in rows if r.proc == STEAL]
    host = [r for r in rows if r.proc == HOST]
    assert len(steal) == len(host) >= 3
    assert [r.t_unix_ns for r in steal] == [r.t_unix_ns for r in host]  # one reading each
    assert all(b.cpu_user_s >= a.cpu_user_s for a, b in itertools.pairwise(steal))
    assert all(r.cpu_cores >= 0 and r.cpu_system_s == 0 for r in steal)
    with pytest.raises(ValueError, match="'steal'"):
        Sampler({STEAL: 1})


def _write(path: Path, rows: list[Sample]) -> None:
    path.write_text(",".join(CSV_COLUMNS) + "\n" + "".join(r.csv_line() for r in rows))


def test_under_slurm_each_node_is_judged_with_the_processes_it_ran(tmp_path: Path) -> None:
    """server on node1; client-0 and client-2 on node2, each sampled by its own wrapper: the
    node CSVs' host, steal and sampler rows come back per process name, and node2's siblings
    are the run's, not each other's neighbours."""
    # The harness's own machine saw only the srun launchers (replaced) and a busy host.
    _write(tmp_path / MONITOR_CSV, [*_tree("server", 0.01), *_tree(HOST, 1.5)])
    _write(
        node_csv(tmp_path, "server"),
        [*_tree("server", 0.5), *_tree(SAMPLER, 0.02), *_tree(HOST, 0.55), *_tree(STEAL, 0.0)],
    )
    for name in ("client-0", "client-2"):
        _write(
            node_csv(tmp_path, name),
            [*_tree(name, 0.3), *_tree(SAMPLER, 0.02), *_tree(HOST, 1.34), *_tree(STEAL, 0.01)],
        )
    samples = read_monitor(tmp_path)
    procs = {s.proc for s in samples}
    assert {"host@server", "steal@client-0", "sampler@client-2", "server", "client-0"} <= procs
    # The harness machine's own host rows stay its own, never mixed with a node's.
    assert {s.cpu_cores for s in samples if s.proc == HOST} == {1.5}
    meta = {
        "launch_prefixes": {
            "server": ["srun", "--nodelist=node1"],
            "client-0": ["srun", "--nodelist=node2"],
            "client-2": ["srun", "--nodelist=node2"],
        }
    }
    got = interference.measure(samples, WINDOW, meta)
    # node1: 0.55 - 0.5 - 0.02; node2: 1.34 - 2 x 0.3 - 2 x 0.02 = 0.7: the busiest is node2.
    assert got.others_cpu_cores == pytest.approx(0.7)
    assert got.steal_cores == pytest.approx(0.01)
    assert got.interference is True and str(got.reason).endswith("(others on node2)")
    # Without knowing where the processes ran, each wrapper is a node of its own, and the
    # sibling client is a neighbour: more others, never fewer.
    alone = interference.measure(samples, WINDOW, {})
    assert alone.others_cpu_cores == pytest.approx(1.34 - 0.3 - 0.02)


# -- the campaign: comparisons, findings, report --------------------------------------------------


def _campaign_runs() -> pl.DataFrame:
    rows = []
    for transport, rtt in (("tcp", 1000.0), ("kcp", 1400.0)):
        for k in range(6):
            busy = transport == "kcp" and k < 2
            rows.append(
                {"campaign": "c", "cell_id": f"{transport}-p20", "run_id": f"r{k + 1}",
                 "prototype": "reference", "transport": transport, "players": 20,
                 "workload": "active", "params": "{}", "network_profile": "lan",
                 "duration_s": 10.0, "status": "ok",
                 "rtt_net_p50_us": rtt * (3.0 if busy else 1.0) + k,
                 "server_cpu_cores": 0.2, "others_cpu_cores": 0.9 if busy else 0.02,
                 "steal_cores": 0.0, "interference": busy,
                 "interference_reason": "others used 0.90 cores on average (threshold 0.25)"
                 if busy else None}
            )  # fmt: skip
    return pl.DataFrame(rows)


def test_a_campaign_leaves_flagged_runs_out_of_comparisons_and_says_so(tmp_path: Path) -> None:
    runs = _campaign_runs()
    comps = analyse.comparisons(runs)
    rtt = comps.filter(pl.col("metric") == "rtt_net_p50_us").row(0, named=True)
    assert {rtt["a"], rtt["b"]} == {"kcp", "tcp"}
    assert rtt["n_a"] + rtt["n_b"] == 10  # 12 ok runs, 2 beside a busy neighbour
    found = [f for f in analyse.findings(runs, analyse.cells(runs), comps)
             if f["kind"] == "interference"]  # fmt: skip
    assert len(found) == 1
    f = found[0]
    assert f["estimate"] == 2 and f["unit"] == "count" and f["left_out_of"] == "comparisons"
    assert f["context"]["runs"] == ["kcp-p20/r1", "kcp-p20/r2"]
    assert f["context"]["others_cores"] == [0.9, 0.9]
    said = sentences.sentence(f)
    assert said.startswith("2 of 12 ok runs were measured beside a busy neighbour")
    assert "left out of comparisons" in said and "kcp-p20/r1 (0.9 cores)" in said
    assert "interference" in dict(sentences.SECTIONS)["What cannot be concluded"]
    # The report's table shows them with the stats stage's reason, and nothing else.
    table = tables.interference_table(runs)
    assert table["run"].to_list() == ["kcp-p20/r1", "kcp-p20/r2"]
    assert table["reason"].to_list()[0].startswith("others used 0.90 cores")
    assert tables.interference_table(runs.drop("interference")).height == 0
    # A runs table without the columns (older campaigns) has no such finding.
    old = runs.drop("interference", "interference_reason", "others_cpu_cores", "steal_cores")
    assert not [f for f in analyse.findings(old, analyse.cells(old), analyse.comparisons(old))
                if f["kind"] == "interference"]  # fmt: skip


# -- the nightly: the night file and the decision ------------------------------------------------


def _flag(runs: pl.DataFrame, cell: str, run_ids: tuple[str, ...], factor: float) -> pl.DataFrame:
    """runs with run_ids of cell flagged interference and their metrics factor times larger."""
    hit = (pl.col("cell_id") == cell) & pl.col("run_id").is_in(list(run_ids))
    return runs.with_columns(
        interference=hit,
        others_cpu_cores=pl.when(hit).then(1.0).otherwise(0.02),
        rtt_net_p50_us=pl.when(hit).then(pl.col("rtt_net_p50_us") * factor)
        .otherwise(pl.col("rtt_net_p50_us")),
        server_cpu_cores=pl.when(hit).then(pl.col("server_cpu_cores") * factor)
        .otherwise(pl.col("server_cpu_cores")),
    )  # fmt: skip


def test_night_import_leaves_flagged_runs_out_of_medians_and_runs_and_counts_them(
    tmp_path: Path,
) -> None:
    runs = _flag(night_runs(seed=1), "ref-tcp-p20", ("r1", "r2", "r3"), 5.0)
    night = night_table(night_results(tmp_path, "night", runs), "2026-01-01T00:00:00+00:00")
    tcp = night.filter(pl.col("cell_id") == "ref-tcp-p20").row(0, named=True)
    kept = runs.filter((pl.col("cell_id") == "ref-tcp-p20") & ~pl.col("interference"))
    assert tcp["n_runs"] == 3 and tcp["n_interfered"] == 3
    assert tcp["rtt_net_p50_us"] == pytest.approx(kept["rtt_net_p50_us"].median())
    stored = [float(v) for v in tcp["rtt_net_p50_us__runs"].split(";")]
    assert sorted(stored) == pytest.approx(sorted(kept["rtt_net_p50_us"].to_list()))
    udp = night.filter(pl.col("cell_id") == "ref-udp-p20").row(0, named=True)
    assert udp["n_runs"] == 6 and udp["n_interfered"] == 0


def test_the_decision_never_sees_flagged_runs_and_notes_them(tmp_path: Path) -> None:
    hist = tmp_path / "history"
    # Tonight three tcp runs were measured beside a busy neighbour 5x slower: left out, the
    # cell is not suspected, and the decision says what it left out.
    tonight = _flag(night_runs(seed=9), "ref-tcp-p20", ("r1", "r2", "r3"), 5.0)
    for i, runs in enumerate([*(night_runs(seed=s) for s in range(3)), tonight]):
        res = night_results(tmp_path / f"n{i}", "nightly", runs)
        import_night(res, hist, time_utc=f"2026-11-2{i}T02:00:00+00:00", machine=this_machine())
    doc = decide(read_history(hist, "nightly"), "rtt_net_p50_us")
    assert doc["left_out"]["interfered_runs"] == 3
    assert doc["left_out"]["cells"] == {"ref-tcp-p20": 3}
    assert doc["left_out"]["note"].startswith("3 run(s) measured beside a busy neighbour left out")
    tcp = next(c for c in doc["cells"] if c["cell"] == "ref-tcp-p20")
    assert tcp["n_tonight"] == 3 and tcp["n_interfered"] == 3
    assert not tcp["suspected"] and tcp["tonight"] / tcp["baseline"] == pytest.approx(1, abs=0.1)
    # A re-run's flagged runs confirm nothing either, and the confirmed decision says so.
    rerun = _flag(night_runs(seed=11), "ref-tcp-p20", ("r1",), 5.0)
    done = confirm(doc, read_history(hist, "nightly"), rerun)
    assert done["left_out"]["rerun_interfered_runs"] == 1
    assert "re-run" in done["left_out"]["rerun_note"]
    json.dumps(done, allow_nan=False)  # the decision stays plain JSON
    # The history report says it, in the stats stage's words.
    tables = tmp_path / "tables"
    tables.mkdir()
    write_decision(done, read_history(hist, "nightly"), tables / "regressions.json")
    shown = history_report.shape(tables)["decision"]["left_out"]
    assert shown == [done["left_out"]["note"], done["left_out"]["rerun_note"]]


def test_a_night_without_the_column_loses_nothing(tmp_path: Path) -> None:
    runs = night_runs(seed=2)
    night = night_table(night_results(tmp_path, "old", runs), "2026-01-01T00:00:00+00:00")
    assert night["n_runs"].to_list() == [6, 6, 6]
    assert night["n_interfered"].to_list() == [0, 0, 0]
    assert interference.usable(runs).height == runs.height
