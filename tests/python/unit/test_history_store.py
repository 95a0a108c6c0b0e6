"""The history store (data/history/<campaign>/<night>.csv), the nightly decision against a
rolling baseline of comparable nights, and the confirming re-run
(stats/history/store.py and decide.py), and what the report shapes from the decision. (The
decision drawn with R: e2e/render/test_history_report.py; the Snakemake target: e2e/workflow/
test_history_confirm_target.py; apache-otava's own CLI: e2e/toolchain/test_otava.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from stats import regress
from stats.history import HistoryError
from stats.history.decide import (
    REGRESSIONS_SCHEMA,
    confirm,
    decide,
    suspected_cells,
    write_decision,
    write_regressions,
)
from stats.history.store import (
    PROVENANCE_COLUMNS,
    import_night,
    list_nights,
    otava_series,
    read_history,
)
from workflow.harness.environment import this_machine

from support.history_nights import (
    STORE_CELLS,
    import_nights,
    night_results,
    night_runs,
)
from support.raw_campaign import RawCampaign, cell


def test_import_writes_one_otava_shaped_file_per_night_and_is_idempotent(tmp_path: Path) -> None:
    res = night_results(tmp_path, "nightly", night_runs())
    hist = tmp_path / "history"
    machine = this_machine()
    path, new = import_night(res, hist, "2026-11-26T02:00:00+00:00", machine)
    assert new and path.parent == hist / "nightly"
    assert path.name.startswith("20261126T020000Z-")
    before = path.read_bytes()
    again, new_again = import_night(res, hist, None, machine)  # again: no change
    assert (again, new_again) == (path, False)
    assert sorted(p.name for p in (hist / "nightly").iterdir()) == [path.name]
    assert path.read_bytes() == before
    table = pl.read_csv(path)
    assert table.height == len(STORE_CELLS)  # one row per cell
    # otava's CSV source: a time column, one numeric column per metric, commit as attribute
    assert {"time", "rtt_net_p50_us", "server_cpu_cores", "commit"} <= set(table.columns)
    assert table["rtt_net_p50_us"].dtype == pl.Float64
    for col in PROVENANCE_COLUMNS:
        assert table[col].null_count() == 0, col
    assert table["library_versions"].unique().to_list() == ["v1.0.0"]
    assert table["profile"].unique().to_list() == ["lan"]
    # What each cell is, for the trend site and the per-version verdicts.
    assert table["transport"].to_list() == [c.split("-")[1] for c in sorted(STORE_CELLS)]
    assert table["library"].unique().to_list() == ["example.com/netcode"]
    assert table["library_version"].unique().to_list() == ["v1.0.0"]
    runs = table["rtt_net_p50_us__runs"][0].split(";")
    assert len(runs) == 6
    assert table["rtt_net_p50_us"][0] == pytest.approx(float(np.median([float(v) for v in runs])))
    listed = list_nights(hist)
    assert listed.select("campaign", "cells").rows() == [("nightly", len(STORE_CELLS))]
    series = otava_series(read_history(hist, "nightly"), STORE_CELLS[0])
    assert series.columns[0] == "time" and series.height == 1


def test_import_takes_the_machine_from_the_newest_raw_run(tmp_path: Path) -> None:
    # data/raw/<campaign> beside data/results/<campaign>, read through the layout's walker:
    # the run measured last names the machine, not the importing one.
    res = night_results(tmp_path / "data", "nightly", night_runs())
    raw = RawCampaign(tmp_path / "data" / "raw", "nightly")
    runs = [("r1", 2, "new cpu"), ("r2", 1, "old cpu")]
    raw.plan([cell(STORE_CELLS[0], run_id) for run_id, _, _ in runs])
    for run_id, start_ns, cpu in runs:
        versions = {"cpu_model": cpu, "cpu_count": 8, "hostname": "node7"}
        raw.ok(
            cell(STORE_CELLS[0], run_id),
            meta={"window_start_unix_ns": start_ns, "versions": versions},
        )
    path, _ = import_night(res, tmp_path / "history", "2026-11-26T02:00:00+00:00", {})
    table = pl.read_csv(path)
    assert table["cpu_model"].unique().to_list() == ["new cpu"]
    assert table["host"].unique().to_list() == ["node7"]


def test_missing_runs_table_is_named(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"runs\.parquet: missing"):
        import_night(tmp_path, tmp_path / "history")


def test_identical_nights_raise_no_alarm(tmp_path: Path) -> None:
    hist = import_nights(tmp_path)
    doc = decide(read_history(hist, "nightly"), k=4)
    assert len(doc["baseline_nights"]) == 4
    assert len(doc["cells"]) == len(STORE_CELLS)
    assert suspected_cells(doc) == []
    assert not any(c["change_point_tonight"] for c in doc["cells"])


def test_one_baseline_night_decides_but_suspects_nothing(tmp_path: Path) -> None:
    # One earlier night says nothing of how much nights differ (identical nights of the
    # reference prototype differ by up to 30 %): even 1.3x is decided, not suspected.
    doc = decide(read_history(import_nights(tmp_path, slow_last=1.3, n=2), "nightly"))
    [first] = [c for c in doc["cells"] if c["cell"] == STORE_CELLS[0]]
    assert first["verdict"] == regress.REGRESSION and first["night_spread"] is None
    assert suspected_cells(doc) == [] and "no cell is suspected" in doc["note"]


def test_a_slow_night_is_suspected_and_a_slow_rerun_confirms(tmp_path: Path) -> None:
    hist = import_nights(tmp_path, slow_last=1.3)
    table = read_history(hist, "nightly")
    doc = decide(table, k=4)
    assert suspected_cells(doc) == [STORE_CELLS[0]]
    [cell] = [c for c in doc["cells"] if c["cell"] == STORE_CELLS[0]]
    assert cell["ratio"] == pytest.approx(1.3, rel=0.05)
    assert cell["interval"][0] > 1.05 and cell["q"] <= 0.05
    assert cell["confirmed"] is None
    # The re-run (own campaign, the night's cell ids) is slow too: confirmed.
    rerun = night_runs({STORE_CELLS[0]: 1.3}, seed=9, cells=(STORE_CELLS[0],))
    done = confirm(doc, table, rerun)
    by_cell = {c["cell"]: c for c in done["cells"]}
    assert by_cell[STORE_CELLS[0]]["confirmed"] is True
    assert by_cell[STORE_CELLS[1]]["confirmed"] is False
    # A re-run back at normal speed does not confirm it (a one-night fluke).
    fluke = confirm(doc, table, night_runs(seed=11, cells=(STORE_CELLS[0],)))
    assert {c["cell"]: c["confirmed"] for c in fluke["cells"]}[STORE_CELLS[0]] is False
    write_regressions(done, tmp_path / "regressions.json")
    saved = json.loads((tmp_path / "regressions.json").read_text())
    assert saved["schema"] == REGRESSIONS_SCHEMA
    for key in ("cell", "metric", "baseline", "tonight", "ratio", "interval", "p", "q",
                "suspected", "confirmed"):  # fmt: skip
        assert key in saved["cells"][0], key


def test_nights_on_other_hardware_are_never_the_baseline(tmp_path: Path) -> None:
    hist = import_nights(tmp_path, n=3)
    table = read_history(hist, "nightly")
    newest = table["file"].max()
    # The newest night ran on another machine: nothing to compare it with.
    other = table.with_columns(
        pl.when(pl.col("file") == newest).then(pl.lit("other")).otherwise(pl.col("hardware"))
        .alias("hardware")
    )  # fmt: skip
    doc = decide(other)
    assert doc["cells"] == [] and doc["baseline_nights"] == []
    assert doc["other_hardware_nights"] == 2
    assert regress.REGRESSION not in json.dumps(doc)


def test_confirm_campaign_reruns_just_the_suspected_cells(tmp_path: Path) -> None:
    from workflow.campaign import expand as campaigns
    from workflow.campaign.confirm import confirm_campaign

    night = campaigns.plan("quick")
    cells = sorted({r.cell["cell_id"] for r in night.runs})
    suspect = next(c for c in cells if "-tcp-p20-" in c)
    doc = {"campaign": "quick", "night_id": "0123abcd", "cells": [
        {"cell": c, "suspected": c == suspect} for c in cells
    ]}  # fmt: skip
    out = confirm_campaign(doc, None, tmp_path)
    rerun = campaigns.plan(out)
    assert out == tmp_path / "quick-confirm-0123abcd.yaml"
    assert rerun.name == "quick-confirm-0123abcd"
    # The night's cell id, 6 runs of it and nothing else.
    assert {r.cell["cell_id"] for r in rerun.runs} == {suspect}
    assert len(rerun.runs) == len([r for r in night.runs if r.cell["cell_id"] == suspect])
    with pytest.raises(campaigns.CampaignError, match="nothing to confirm"):
        confirm_campaign({"campaign": "quick", "cells": []}, None, tmp_path)


def test_cli_import_decide_confirm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workflow.cli.main import main

    hist = import_nights(tmp_path, n=4)
    res = night_results(tmp_path / "tonight", "nightly", night_runs({STORE_CELLS[1]: 1.4}, seed=7))
    h = ["--history-dir", str(hist)]
    assert main(["history", "import", str(res), *h]) == 0
    assert main(["history", "import", str(res), *h]) == 0  # idempotent
    assert "already in the history" in capsys.readouterr().out
    assert len(list((hist / "nightly").glob("*.csv"))) == 5
    assert main(["history", "list", *h]) == 0
    assert main(["history", "show", "nightly", *h]) == 0
    otava = tmp_path / "otava.csv"
    assert (
        main(
            ["history", "show", "nightly", "--cell", STORE_CELLS[1], "--otava-csv", str(otava), *h]
        )
        == 0
    )
    assert pl.read_csv(otava).height == 5
    decision = tmp_path / "decision.json"
    assert main(["history", "decide", "nightly", "--out", str(decision), "--k", "4", *h]) == 0
    assert [c["cell"] for c in json.loads(decision.read_text())["cells"] if c["suspected"]] == [
        STORE_CELLS[1]
    ]
    rerun = night_results(
        tmp_path / "rerun", "nightly-confirm", night_runs({STORE_CELLS[1]: 1.4}, seed=8)
    )
    out = tmp_path / "regressions.json"
    args = ["history", "confirm", str(decision), "--rerun", str(rerun), "--out", str(out), *h]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    assert [c["cell"] for c in doc["cells"] if c["confirmed"]] == [STORE_CELLS[1]]
    missing = ["history", "confirm", str(decision), "--rerun", str(tmp_path), "--out", str(out)]
    assert main([*missing, *h]) == 2
    assert "run the confirming campaign" in capsys.readouterr().err


def test_a_change_within_the_nights_own_spread_is_not_suspected(tmp_path: Path) -> None:
    # Runs within a night agree to 2 %, but whole nights differ by up to 20 %: tonight 20 %
    # above the pooled baseline is a clear per-run difference and still no suspect.
    hist = tmp_path / "history"
    for i, factor in enumerate((1.0, 1.2, 0.85, 1.15, 1.2)):
        runs = night_runs({c: factor for c in STORE_CELLS}, seed=i)
        res = night_results(tmp_path / f"n{i}", "nightly", runs)
        import_night(res, hist, f"2026-11-2{i}T02:00:00+00:00", this_machine())
    doc = decide(read_history(hist, "nightly"), k=4)
    cell = doc["cells"][0]
    assert cell["verdict"] == regress.REGRESSION  # the pooled runs alone would say so
    assert cell["night_spread"] > 0.15 and cell["effect_threshold"] == cell["night_spread"]
    assert suspected_cells(doc) == []


def test_the_report_shapes_the_decision_with_trends_and_confirmed_first(tmp_path: Path) -> None:
    from report import history as history_report

    hist = import_nights(tmp_path, slow_last=1.3)
    table = read_history(hist, "nightly")
    doc = decide(table, k=3)
    done = confirm(doc, table, night_runs({STORE_CELLS[0]: 1.3}, seed=9, cells=(STORE_CELLS[0],)))
    tables = tmp_path / "tables"
    write_decision(done, table, tables / "regressions.json")
    trend = pl.read_csv(tables / "night-trends.csv")
    # 5 nights x 3 cells; the night before the 3-night baseline window is "earlier"
    assert trend.group_by("role").len().sort("role").rows() == [
        ("baseline", 9), ("earlier", 3), ("tonight", 3)
    ]  # fmt: skip
    shown = history_report.shape(tables)
    assert shown["has_decision"] and not shown["has_trends"]
    assert shown["decision"]["confirmed"] == [STORE_CELLS[0]]
    first = shown["decision"]["sentences"][0]
    assert first.startswith(f"{STORE_CELLS[0]}: regression") and "confirmed by the re-run" in first
    assert shown["unit_shown"] == "ms"
