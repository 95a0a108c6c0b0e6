"""Each library version of a night against its predecessor (stats/history/versions.py): the
"versions" list of the nightly decision."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from stats.history import HistoryError
from stats.history.decide import confirm, decide, file_verdicts
from stats.history.store import import_night, read_history
from stats.history.versions import (
    DOES_NOT_BUILD,
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    confirm_versions,
    rerun_cells,
    version_verdicts,
)

from support.history_nights import night_results

LIB = "github.com/xtaci/kcp-go/v5"


def runs(factors: dict[str, float], seed: int = 0, n: int = 8) -> pl.DataFrame:
    """kcp cells of one context, one per version (factor: how much slower), and a tcp cell
    measured at one version only."""
    rng = np.random.default_rng(seed)
    rows = []
    cells = [(f"kcp-{v}", "kcp", LIB, v, f) for v, f in factors.items()]
    cells.append(("tcp-pinned", "tcp", "Go net", "go1.26.8", 1.0))
    for cell, transport, library, version, factor in cells:
        for k in range(n):
            rows.append(
                {"cell_id": cell, "run_id": f"r{k}", "status": "ok", "prototype": "reference",
                 "transport": transport, "library": library, "library_release": version,
                 "players": 100, "workload": "active", "params": "{}", "network_profile": "lan",
                 "transport_options": "{}", "duration_s": 12.0,
                 "rtt_net_p50_us": 200.0 * factor * float(rng.lognormal(0, 0.01)),
                 "server_cpu_cores": 0.3 * float(rng.lognormal(0, 0.01))}
            )  # fmt: skip
    return pl.DataFrame(rows)


def test_each_version_is_compared_with_the_one_before_it_in_version_order() -> None:
    # v5.7.10 after v5.7.9 (natural order), 20 % slower; v5.7.11 as slow as v5.7.10.
    night = runs({"v5.7.11": 1.2, "v5.7.9": 1.0, "v5.7.10": 1.2})
    published = {(LIB, "v5.7.11"): "2026-11-20T00:00:00Z"}
    found = version_verdicts(night, published=published)
    rtt = {v["version"]: v for v in found if v["metric"] == "rtt_net_p50_us"}
    assert set(rtt) == {"v5.7.10", "v5.7.11"}  # the oldest has nothing before it; tcp one only
    slow = rtt["v5.7.10"]
    assert (slow["predecessor"], slow["verdict"]) == ("v5.7.9", SLOWER)
    assert slow["interval"][0] > 1.1 and slow["predecessor_cell"] == "kcp-v5.7.9"
    same = rtt["v5.7.11"]
    assert (same["predecessor"], same["verdict"]) == ("v5.7.10", NO_DIFFERENCE)
    # "no difference shown", bounded: the interval allows at most this much either way
    assert same["bound"] is not None and 0 < same["bound"] < 0.05
    assert same["published"] == "2026-11-20T00:00:00Z" and slow["published"] is None
    # What the pair could see: 8 runs a side at 1 % log spread detect a few per cent.
    assert 1.005 < same["detectable_ratio"] < 1.05
    cpu = {v["version"]: v["verdict"] for v in found if v["metric"] == "server_cpu_cores"}
    assert cpu == {"v5.7.10": NO_DIFFERENCE, "v5.7.11": NO_DIFFERENCE}
    # The re-run measures both cells of the slower pair again.
    assert rerun_cells(found) == ["kcp-v5.7.10", "kcp-v5.7.9"]


def test_a_faster_version_and_one_that_does_not_build_are_listed() -> None:
    night = runs({"v1.0.0": 1.0, "v1.1.0": 0.8})
    broken = [{"library": LIB, "transport": "kcp", "version": "v1.2.0", "predecessor": "v1.1.0",
               "build_error": "undefined: kcp.NewConn"}]  # fmt: skip
    found = version_verdicts(night, metrics=("rtt_net_p50_us",), not_built=broken)
    by_version = {v["version"]: v for v in found}
    assert by_version["v1.1.0"]["verdict"] == FASTER
    assert by_version["v1.2.0"]["verdict"] == DOES_NOT_BUILD
    assert by_version["v1.2.0"]["build_error"] == "undefined: kcp.NewConn"
    assert rerun_cells(found) == []


def test_a_slower_version_is_confirmed_only_when_the_rerun_finds_it_slower_again() -> None:
    found = version_verdicts(runs({"v1.0.0": 1.0, "v1.1.0": 1.2}), metrics=("rtt_net_p50_us",))
    again = confirm_versions(found, runs({"v1.0.0": 1.0, "v1.1.0": 1.2}, seed=5), 0.05)
    assert [v["confirmed"] for v in again] == [True]
    fluke = confirm_versions(found, runs({"v1.0.0": 1.0, "v1.1.0": 1.0}, seed=6), 0.05)
    assert [v["confirmed"] for v in fluke] == [False]
    assert fluke[0]["confirm_ratio"] is not None


def test_a_runs_table_without_versions_gives_no_verdicts() -> None:
    assert version_verdicts(pl.DataFrame({"cell_id": ["a"], "status": ["ok"]})) == []


def test_the_night_decision_carries_version_verdicts_and_files_them_once(tmp_path: Path) -> None:
    hist = tmp_path / "history"
    for i in range(3):  # tonight: v1.1.0 is 20 % slower than v1.0.0, measured beside it
        night = runs({"v1.0.0": 1.0, "v1.1.0": 1.2 if i == 2 else 1.0}, seed=i)
        night = night.with_columns(campaign=pl.lit("nightly"))
        res = night_results(tmp_path / f"n{i}", "nightly", night)
        import_night(res, hist, f"2026-11-2{i}T02:00:00+00:00", {"cpu_model": "x", "cpu_count": 2})
    table = read_history(hist, "nightly")
    doc = decide(table, published={(LIB, "v1.1.0"): "2026-11-21T09:00:00Z"})
    [slow] = [v for v in doc["versions"] if v["metric"] == "rtt_net_p50_us"]
    assert (slow["version"], slow["verdict"], slow["published"]) == (
        "v1.1.0", SLOWER, "2026-11-21T09:00:00Z",
    )  # fmt: skip
    assert doc["rerun_cells"] == ["kcp-v1.0.0", "kcp-v1.1.0"]
    rerun = runs({"v1.0.0": 1.0, "v1.1.0": 1.2}, seed=9)
    done = confirm(doc, table, rerun)
    assert [v["confirmed"] for v in done["versions"] if v["metric"] == "rtt_net_p50_us"] == [True]
    path, new = file_verdicts(done, hist)
    assert new and path.parent == hist / "nightly" / "verdicts"
    assert path.stem == Path(doc["night"]).stem
    assert json.loads(path.read_text())["versions"][0]["confirmed"] is not None
    assert file_verdicts(done, hist) == (path, False)  # the same decision again: nothing
    with pytest.raises(HistoryError, match="never overwritten"):
        file_verdicts(dict(done, cells=[]), hist)


def test_a_callgrind_pair_is_compared_on_instructions_only_with_its_smaller_min_effect() -> None:
    # Two versions under callgrind: 3 % more instructions per message in the newer one (spread
    # 0.3 %), and a 30 % RTT change that is callgrind's, not the library's.
    rng = np.random.default_rng(1)
    rows = []
    for version, factor in (("v1.0.0", 1.0), ("v1.1.0", 1.03)):
        for k in range(6):
            rows.append(
                {"cell_id": f"cg-{version}", "run_id": f"r{k}", "status": "ok",
                 "prototype": "reference", "transport": "kcp", "library": LIB,
                 "library_release": version, "players": 20, "workload": "active",
                 "server_profiler": "callgrind",
                 "server_instr_per_msg": 2700 * factor * float(rng.lognormal(0, 0.003)),
                 "rtt_net_p50_us": 100.0 * (1.3 if version == "v1.1.0" else 1.0)}
            )  # fmt: skip
    found = version_verdicts(pl.DataFrame(rows))
    assert [v["metric"] for v in found] == ["server_instr_per_msg"]
    (v,) = found
    # 3 % is below the default 5 % minimum effect but above instructions' own 2 %.
    assert v["verdict"] == SLOWER and v["min_effect"] == 0.02
    assert 1.02 < v["ratio"] < 1.04
