"""The campaign report: figure data, rendering, self-containment, numbers, pictures.

A synthetic campaign (report_fixture.py) has every figure type; the stats stage and the figure
shaping run on it for real, and the report is rendered with R (rmarkdown + knitr + pandoc) as
on any machine without Quarto. The workflow tests render the real quick campaign's report.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import report_checks as rc
import report_fixture

from report import figdata, render, sentences, snapshot
from stats import analyse

FIGURE_IDS = [
    "rtt-players", "resources-players", "rates-players", "idle-active", "rtt-time",
    "world-size", "envmod-time", "profiles", "versions",
]  # fmt: skip
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("synthetic")
    results = root / "results"
    report_fixture.build(results)
    return {"root": root, "results": results}


@pytest.fixture(scope="module")
def rendered(synthetic: dict[str, Path]) -> dict[str, Path]:
    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed")
    out = synthetic["root"] / "out"
    # The results alone: the report reads nothing of data/raw.
    params = {"results": str(synthetic["results"])}
    render.render(params, out / "index.html", pdf=out / "index.pdf")
    return {**synthetic, "html": out / "index.html", "pdf": out / "index.pdf"}


def _manifest(results: Path) -> dict[str, dict]:
    doc = json.loads((results / "figures" / "manifest.json").read_text())
    return {f["id"]: f for f in doc["figures"]}


def test_synthetic_campaign_has_every_figure_type(synthetic: dict[str, Path]) -> None:
    figs = _manifest(synthetic["results"])
    assert list(figs) == FIGURE_IDS
    # idle and active are the only contexts with several player counts: two panels
    assert figs["rtt-players"]["panels"] == 2
    for fid, f in figs.items():
        assert f["expected"], (fid, f["reason"])
        assert f["caption"] and f["runs"] > 0, fid
        for name in f["files"]:
            table = pl.read_csv(synthetic["results"] / "figures" / name)
            assert table.height > 0, name


def test_figure_data_carries_the_stats_numbers(synthetic: dict[str, Path]) -> None:
    """Figures draw the stats stage's intervals, converted to the shown unit, never recomputed."""
    results = synthetic["results"]
    cells = pl.read_parquet(results / "cells.parquet").filter(pl.col("metric") == "rtt_net_p50_us")
    shown = pl.read_csv(results / "figures" / "rtt-players.cells.csv").filter(
        pl.col("metric") == "rtt_net_p50_us"
    )
    joined = shown.join(cells, on="cell_id", suffix="_stats")
    assert joined.height == shown.height > 0
    for r in joined.iter_rows(named=True):
        assert r["y"] == pytest.approx(r["estimate_stats"] / 1000)
        if r["ci_low_stats"] is not None:
            assert r["y_low"] == pytest.approx(r["ci_low_stats"] / 1000)
            assert r["y_high"] == pytest.approx(r["ci_high_stats"] / 1000)


def test_change_point_of_the_slower_versions_is_found(synthetic: dict[str, Path]) -> None:
    """The stats stage finds it (changepoints.csv); the figure draws the same rows."""
    found = pl.read_csv(
        synthetic["results"] / "changepoints.csv", schema_overrides={"library_version": pl.String}
    ).sort("version_order")
    versions = pl.read_csv(
        synthetic["results"] / "figures" / "versions.cells.csv",
        schema_overrides={"library_version": pl.String},
    ).sort("version_order")
    for table in (found, versions):
        assert table["library_version"].to_list() == list(report_fixture.VERSIONS)
        assert table.filter(pl.col("change_point"))["library_version"].to_list() == [
            report_fixture.STEP_FROM
        ]
    # Drawn in ms: the stats stage's medians (µs) converted once.
    assert versions["y"].to_list() == pytest.approx((found["estimate"] / 1000).to_list())


def test_quick_like_campaign_says_why_figures_are_missing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    report_fixture.build(results)
    runs = pl.read_parquet(results / "runs.parquet").filter(
        pl.col("workload").is_in(["idle", "active"])
        & (pl.col("network_profile") == "lan")
        & (pl.col("library_version") == "pinned")
    )
    runs.write_parquet(results / "runs.parquet")
    analyse.analyse(results)
    figs = {f.id: f for f in figdata.shape(results)}
    drawn = {fid for fid, f in figs.items() if f.expected}
    assert drawn == {"rtt-players", "resources-players", "rates-players", "idle-active", "rtt-time"}
    for fid in set(FIGURE_IDS) - drawn:
        assert figs[fid].reason, fid


def test_warmup_table_names_every_unsettled_run(synthetic: dict[str, Path]) -> None:
    table = pl.read_csv(synthetic["results"] / "figures" / "warmup.csv")
    runs = pl.read_parquet(synthetic["results"] / "runs.parquet")
    unsettled = runs.filter(pl.col("warmup_second_half").fill_null(False))
    assert unsettled.height == 1
    row = table.filter(pl.col("cell_id") == unsettled["cell_id"][0]).row(0, named=True)
    assert row["not_settled"] == unsettled["run_id"][0]
    assert table["runs"].sum() == runs.filter(pl.col("status") == "ok").height


@needs_r
def test_report_is_self_contained_with_every_figure(rendered: dict[str, Path]) -> None:
    page = rendered["html"].read_text()
    assert rc.external_references(page) == []
    assert rc.missing_figures(page, rendered["results"]) == []
    assert len(rc.figures(page)) == len(FIGURE_IDS)
    assert "None: every figure type was drawn." in rc.text(page)


@needs_r
def test_numbers_in_the_text_equal_the_stats_tables(rendered: dict[str, Path]) -> None:
    page = rendered["html"].read_text()
    words = rc.text(page)
    findings = json.loads((rendered["results"] / "findings.json").read_text())
    assert findings["findings"]
    for f in findings["findings"]:
        said = sentences.sentence(f)
        assert said in words, said
    runs = pl.read_csv(rendered["results"] / "runs.csv")
    ok = runs.filter(pl.col("status") == "ok").height
    failed = runs.filter(pl.col("status") == "failed").height
    assert f"{runs.height} planned runs of {runs['cell_id'].n_unique()} cells: {ok} ok, " \
        f"{failed} failed, 0 not run." in words  # fmt: skip
    cells = pl.read_csv(rendered["results"] / "cells.csv")
    rows = rc.tables(page)["cells"]
    header, body = rows[0], rows[1:]
    assert len(body) == cells["cell_id"].n_unique()
    for metric, column, div in (
        ("rtt_net_p50_us", "RTT p50", 1000), ("server_cpu_cores", "server CPU", 1),
        ("server_rss_bytes", "server RSS", 2**20),
    ):  # fmt: skip
        by_cell = {
            r["cell_id"]: r for r in cells.filter(pl.col("metric") == metric).iter_rows(named=True)
        }
        i, j = header.index(column), header.index(f"{column} interval")
        for row in body:
            stats = by_cell[row[0]]
            assert float(row[i]) == rc.signif(stats["estimate"] / div), (row[0], metric)
            if stats["ci_low"] is None:
                assert row[j] == ""
            else:
                low, high = (float(x) for x in row[j].strip("[]").split(","))
                assert (low, high) == (
                    rc.signif(stats["ci_low"] / div),
                    rc.signif(stats["ci_high"] / div),
                )


def test_failed_runs_table_has_every_run_not_ok_with_its_cause(synthetic: dict[str, Path]) -> None:
    doc = json.loads((synthetic["results"] / "figures" / "manifest.json").read_text())
    table = pl.read_csv(synthetic["results"] / "figures" / doc["tables"]["failed"]["file"])
    runs = pl.read_parquet(synthetic["results"] / "runs.parquet")
    bad = runs.filter(pl.col("status") != "ok")
    assert table["run"].to_list() == [f"{c}/{r}" for c, r in bad.select("cell_id", "run_id").rows()]
    assert set(table["cause"]) == {
        "on $PORT & ~/run: *all* `if` · panic: bad <frame> | chunk_id [3]"
    }
    assert set(table["exit_code"]) == {2} and set(table["attempts"]) == {3}
    # Results written before the failure columns existed still give the table.
    old = figdata.failed_table(runs.drop("exit_code", "stderr_tail", "failure_summary"))
    assert old["cause"].to_list() == [""] * bad.height


@needs_r
def test_failed_runs_and_unsettled_runs_are_listed(rendered: dict[str, Path]) -> None:
    runs = pl.read_csv(rendered["results"] / "runs.csv")
    table = rc.tables(rendered["html"].read_text())["failed-and-missing-runs"]
    failed = [[" ".join(cell.split()) for cell in row] for row in table]
    assert failed[0] == ["run", "status", "reason", "exit code", "attempts", "cause"]
    # The stderr lines reach the page as written, whatever Markdown would make of them.
    assert failed[1:] == [
        [f"{r['cell_id']}/{r['run_id']}", r["status"], r["reason"], str(r["exit_code"]),
         str(r["attempts"]), figdata.CAUSE_SEPARATOR.join(json.loads(r["stderr_tail"]))]
        for r in runs.filter(pl.col("status") != "ok").iter_rows(named=True)
    ]  # fmt: skip
    warm = rc.tables(rendered["html"].read_text())["warm-up"]
    flagged = [row for row in warm[1:] if row[5]]
    assert [(row[0], row[5]) for row in flagged] == [
        (r["cell_id"], r["run_id"])
        for r in runs.filter(pl.col("warmup_second_half").fill_null(False)).iter_rows(named=True)
    ]


@needs_r
def test_pdf_and_browser_pictures_are_not_blank(rendered: dict[str, Path], tmp_path: Path) -> None:
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    pages = snapshot.pdf_pages(rendered["pdf"], tmp_path / "pdf")
    assert len(pages) >= 5
    # Every page carries text or a figure; the figure pages carry much more.
    inks = [snapshot.ink_fraction(p) for p in pages]
    assert min(inks) > 0.002 and max(inks) > 0.05, inks
    try:
        snapshot.browser()
    except snapshot.SnapshotError as exc:
        pytest.skip(str(exc))
    top = snapshot.screenshot(rendered["html"], tmp_path / "page.png")
    assert snapshot.ink_fraction(top) > 0.02
    printed = snapshot.pdf_pages(snapshot.print_pdf(rendered["html"], tmp_path / "print.pdf"),
                                 tmp_path / "print")  # fmt: skip
    assert len(printed) >= 5 and min(snapshot.ink_fraction(p) for p in printed) > 0.002


def test_render_names_a_missing_table(tmp_path: Path) -> None:
    if shutil.which("Rscript") is None:
        pytest.skip("R is not installed")
    with pytest.raises(render.RenderError, match=r"runs\.csv: missing"):
        render.render({"results": str(tmp_path)}, tmp_path / "x.html")
