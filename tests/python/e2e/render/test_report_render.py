"""The campaign report rendered with R (rmarkdown + knitr + pandoc, as on any machine without
Quarto) from a synthetic campaign with every figure type (support/report_fixture.py):
self-contained, every figure drawn, the numbers in the text those of the stats tables, the
failed and unsettled runs listed, and no blank page in the PDF or in the browser's picture."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from report import render, sentences, tables

from support import pdf_words, report_fixture, snapshot
from support import report_checks as rc
from support.marks import needs_r

pytestmark = needs_r

FIGURE_IDS = [
    "rtt-players", "resources-players", "rates-players", "idle-active", "rtt-time",
    "world-size", "envmod-time", "profiles", "versions",
]  # fmt: skip


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("synthetic")
    results = root / "results"
    report_fixture.build(results)
    out = root / "out"
    # The results alone: the report reads nothing of data/raw.
    render.render({"results": str(results)}, out / "index.html", pdf=out / "index.pdf")
    return {"results": results, "html": out / "index.html", "pdf": out / "index.pdf"}


def test_report_is_self_contained_with_every_figure(rendered: dict[str, Path]) -> None:
    page = rendered["html"].read_text()
    assert rc.external_references(page) == []
    assert rc.missing_figures(page, rendered["results"]) == []
    assert len(rc.figures(page)) == len(FIGURE_IDS)
    assert "None: every figure type was drawn." in rc.text(page)


def _cell_ids(cells: pl.DataFrame) -> dict[tuple[str, ...], str]:
    """(transport, version, players, workload, profile) as the tables show them -> cell id."""
    out = {}
    for r in cells.unique("cell_id").iter_rows(named=True):
        label = sentences.params_label(r["params"])
        workload = f"{r['workload']} ({label})" if label else r["workload"]
        key = (r["transport"], str(r["library_version"]), str(r["players"]), workload,
               r["network_profile"])  # fmt: skip
        out[key] = r["cell_id"]
    return out


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
    # Rows are keyed as a reader names a cell and sorted by those keys.
    assert header[:5] == ["transport", "version", "players", "workload", "profile"]
    assert [r[:3] for r in body] == sorted(
        (r[:3] for r in body), key=lambda k: (k[0], k[1], int(k[2]))
    )
    ids = _cell_ids(cells)
    for metric, column, div in (
        ("rtt_net_p50_us", "RTT p50", 1000), ("server_cpu_cores", "server CPU", 1),
        ("server_rss_bytes", "server RSS", 2**20),
    ):  # fmt: skip
        by_cell = {
            r["cell_id"]: r for r in cells.filter(pl.col("metric") == metric).iter_rows(named=True)
        }
        i = header.index(column)
        for row in body:
            stats = by_cell[ids[tuple(row[:5])]]
            value, _, bounds = row[i].partition(" ")
            assert float(value) == rc.signif(stats["estimate"] / div), (row[:5], metric)
            if stats["ci_low"] is None:
                assert bounds == ""
            else:
                low, high = (float(x) for x in bounds.strip("[]").split(","))
                assert (low, high) == (
                    rc.signif(stats["ci_low"] / div),
                    rc.signif(stats["ci_high"] / div),
                )


def test_failed_runs_and_unsettled_runs_are_listed(rendered: dict[str, Path]) -> None:
    runs = pl.read_csv(rendered["results"] / "runs.csv")
    table = rc.tables(rendered["html"].read_text())["failed-and-missing-runs"]
    failed = [[" ".join(cell.split()) for cell in row] for row in table]
    assert failed[0] == ["run", "status", "reason", "exit code", "attempts", "cause"]
    # The stderr lines reach the page as written, whatever Markdown would make of them.
    assert failed[1:] == [
        [f"{r['cell_id']}/{r['run_id']}", r["status"], r["reason"], str(r["exit_code"]),
         str(r["attempts"]), tables.CAUSE_SEPARATOR.join(json.loads(r["stderr_tail"]))]
        for r in runs.filter(pl.col("status") != "ok").iter_rows(named=True)
    ]  # fmt: skip
    warm = rc.tables(rendered["html"].read_text())["warm-up"]
    column = warm[0].index("runs that did not settle")
    ids = _cell_ids(pl.read_csv(rendered["results"] / "cells.csv"))
    flagged = [row for row in warm[1:] if row[column]]
    assert [(ids[tuple(row[:5])], row[column]) for row in flagged] == [
        (r["cell_id"], r["run_id"])
        for r in runs.filter(pl.col("warmup_second_half").fill_null(False)).iter_rows(named=True)
    ]


def test_pdf_words_never_print_over_each_other(rendered: dict[str, Path]) -> None:
    """The cells table of this campaign has 14 columns: it gets a landscape page, and no word of
    the PDF overlaps another (the check that found "RTTRTT" and "[23, 24.5]25.3 %")."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    assert pdf_words.collisions(pdf_words.words(rendered["pdf"])) == []


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
    with pytest.raises(render.RenderError, match=r"runs\.csv: missing"):
        render.render({"results": str(tmp_path)}, tmp_path / "x.html")
