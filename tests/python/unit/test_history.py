"""The nightly regression report: trends with change points and the newest night's verdicts,
computed by stats/history/trends.py (tables and findings as records) and shaped by
report/history.py. (Drawn with R: e2e/render/test_history_report.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from report import history, sentences
from stats import regress
from stats.history import HistoryError, trends

from support.history_nights import SLOW_FROM, TREND_CELLS, TREND_NIGHTS, trend_nights


def test_trends_find_the_step_and_verdicts_the_last_pair(tmp_path: Path) -> None:
    paths = trend_nights(tmp_path)
    doc = trends.compute(paths, tmp_path / "tables")
    assert doc["nights"] == list(TREND_NIGHTS)  # labelled by the version the runs record
    trend = pl.read_csv(tmp_path / "tables" / "trends.csv", schema_overrides={"night": pl.String})
    cps = trend.filter(pl.col("change_point"))
    assert cps.select("cell_id", "night").rows() == [(TREND_CELLS[0], TREND_NIGHTS[SLOW_FROM])]
    assert trend.filter(pl.col("cell_id") == TREND_CELLS[0])["n_runs"].to_list() == [6] * len(
        TREND_NIGHTS
    )
    assert trend["ci_low"].is_not_null().all()  # 6 runs: the median's interval exists
    verdicts = pl.read_csv(tmp_path / "tables" / "verdicts.csv")
    # The last two nights are both slow for kcp: no change between them, for every cell.
    assert set(verdicts["verdict"]) == {regress.NO_CHANGE}
    [cp] = [f for f in doc["findings"] if f["kind"] == "change_point"]
    assert cp["context"] == {
        "cell_id": TREND_CELLS[0],
        "night": "2.0.5",
        "metric": "rtt_net_p50_us",
    }
    assert cp["estimate"] == pytest.approx(1.3, rel=0.05) and cp["unit"] == "ratio"
    assert any("change point at 2.0.5" in sentences.sentence(f) for f in doc["findings"])


def test_a_regression_in_the_newest_night_is_named(tmp_path: Path) -> None:
    paths = trend_nights(tmp_path)[: SLOW_FROM + 1]  # the newest night is the first slow one
    doc = trends.compute(paths, tmp_path / "tables")
    verdicts = pl.read_csv(tmp_path / "tables" / "verdicts.csv")
    by_cell = dict(verdicts.select("cell_id", "verdict").rows())
    assert by_cell == {TREND_CELLS[0]: regress.REGRESSION, TREND_CELLS[1]: regress.NO_CHANGE,
                       TREND_CELLS[2]: regress.NO_CHANGE}  # fmt: skip
    [found] = [f for f in doc["findings"] if f["kind"] == "night_verdict"]
    assert found["verdict"] == regress.REGRESSION and found["context"]["cell_id"] == TREND_CELLS[0]
    low, high = found["interval"]
    assert 1 < low <= found["estimate"] <= high
    said = sentences.sentence(found)
    assert said.startswith(
        f"{TREND_CELLS[0]}: regression from 2.0.4 to 2.0.5: rtt_net_p50_us ratio"
    )
    [counts] = [f for f in doc["findings"] if f["kind"] == "verdict_counts"]
    assert counts["cells_by_verdict"] == {regress.NO_CHANGE: 2, regress.REGRESSION: 1}
    assert sentences.sentence(counts).startswith("2.0.4 to 2.0.5: 2 no change, 1 regression over 3")


def test_bad_input_names_the_file(tmp_path: Path) -> None:
    paths = trend_nights(tmp_path)
    (paths[1] / "runs.parquet").unlink()
    with pytest.raises(HistoryError, match=r"night-2/runs\.parquet: missing"):
        trends.compute(paths, tmp_path / "tables")
    with pytest.raises(HistoryError, match="at least two nights"):
        trends.compute(paths[:1], tmp_path / "tables")
    with pytest.raises(HistoryError, match="no column 'server_cpu_cores'"):
        trends.compute([paths[0], paths[2]], tmp_path / "tables", metric="server_cpu_cores")
    with pytest.raises(history.HistoryReportError, match=r"history\.json"):
        history.shape(tmp_path / "tables")


def test_too_few_nights_for_change_points_is_a_finding(tmp_path: Path) -> None:
    doc = trends.compute(trend_nights(tmp_path)[:3], tmp_path / "tables")
    [few] = [f for f in doc["findings"] if f["kind"] == "too_few_nights"]
    assert few["estimate"] == 3 and few["min_nights"] == regress.CP_MIN_POINTS
    assert (
        sentences.sentence(few)
        == f"change points need at least {regress.CP_MIN_POINTS} nights; 3 given"
    )
    assert json.loads((tmp_path / "tables" / "history.json").read_text()) == doc


def test_the_history_report_says_what_each_comparison_of_the_night_could_see() -> None:
    cell = {"cell": "tcp-100", "verdict": "no change", "baseline": 50.0, "tonight": 51.0,
            "ratio": 1.02, "interval": [0.97, 1.08], "q": 0.4, "detectable_ratio": 1.123,
            "suspected": False}  # fmt: skip
    said = history.verdict_sentence(cell, "us")
    assert "this night could see a change of 12.3 % or more" in said
    assert "could not tell" in history.verdict_sentence(cell | {"detectable_ratio": None}, "us")
    version = {"library": "github.com/xtaci/kcp-go/v5", "version": "v5.7.6",
               "predecessor": "v5.7.5", "metric": "server_instr_per_msg", "verdict": "slower",
               "ratio": 1.041, "interval": [1.03, 1.05], "min_effect": 0.02,
               "detectable_ratio": 1.018, "confirmed": True}  # fmt: skip
    said = history.version_sentence(version)
    assert said.startswith("github.com/xtaci/kcp-go/v5 v5.7.6 against v5.7.5")
    assert "server_instr_per_msg: slower (ratio 1.04, [1.03, 1.05])" in said
    assert "minimum effect 2 %" in said and "could see a change of 1.8 % or more" in said
    assert said.endswith("confirmed by the re-run")
    broken = {"library": "x", "version": "v2", "predecessor": "v1", "verdict": "does not build",
              "build_error": "undefined: Foo"}  # fmt: skip
    assert history.version_sentence(broken) == "x v2 against v1: does not build (undefined: Foo)"
