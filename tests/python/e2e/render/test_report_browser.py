"""The quick campaign's report as a reader first sees it: rendered with R from a stored small
results directory (tests/python/data/quick-results: the runs table, per-second series and plan of
a real quick campaign, 36 runs, 14 of them measured beside a busy neighbour), opened in headless
Chromium at 1280 x 900. The answer table must be on that first screen, the page must load with no
console error, and the screenshot is kept as a test artifact (data/test-artifacts/)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from report import figdata, render
from stats import analyse

from support import pdf_words
from support.marks import CHROMIUM, needs_chromium, needs_r
from support.paths import REPO

pytestmark = [needs_r, needs_chromium]
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (requirements.txt pins it)"
)

STORED = REPO / "tests" / "python" / "data" / "quick-results"
FIRST_SCREEN = {"width": 1280, "height": 900}


def _artifacts() -> Path:
    out = Path(os.environ.get("NETSTICK_TEST_ARTIFACTS") or REPO / "data" / "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[str], Path]]:
    results = tmp_path_factory.mktemp("quick") / "results"
    shutil.copytree(STORED, results)
    # runs.csv beside runs.parquet, as ingest writes both (the report reads the CSV).
    pl.read_parquet(results / "runs.parquet").write_csv(results / "runs.csv")
    analyse.analyse(results)
    figdata.shape(results)
    html = results.parent / "out" / "index.html"
    render.render({"results": str(results)}, html, pdf=html.with_suffix(".pdf"))
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            p = browser.new_page(viewport=FIRST_SCREEN)
            p.on(
                "console",
                lambda m: errors.append(f"{m.type}: {m.text}") if m.type == "error" else None,
            )
            p.on("pageerror", lambda exc: errors.append(f"exception: {exc}"))
            p.goto(html.as_uri(), wait_until="load")
            p.screenshot(path=str(_artifacts() / "quick-report-first-screen.png"))
            yield p, errors, results
        finally:
            browser.close()


def test_the_answer_table_is_on_the_first_screen(page: tuple[Any, list[str], Path]) -> None:
    p, _, results = page
    table = p.locator("#answer table")
    assert table.count() == 1
    box = table.bounding_box()
    assert box is not None and box["y"] + box["height"] <= FIRST_SCREEN["height"], box
    question = p.get_by_text("Question:", exact=False).first.bounding_box()
    assert question is not None and question["y"] < box["y"]
    # Every planned transport comparison of the answer's metrics has its row: 3 pairs x 2 player
    # counts x (RTT p50, server CPU).
    rows = table.locator("tbody tr")
    assert rows.count() == 12
    text = table.inner_text()
    assert " ms" in text and "of a 60 Hz frame" in text and "of one core" in text, text
    found = json.loads((results / "findings.json").read_text())["findings"]
    made = [f for f in found if f["kind"] == "comparison"]
    assert len(made) == 3 * 2 * 4  # RTT p50 and p99, server CPU and CPU per message


def test_the_page_loads_without_console_errors(page: tuple[Any, list[str], Path]) -> None:
    _, errors, _ = page
    assert errors == []
    assert (_artifacts() / "quick-report-first-screen.png").stat().st_size > 10_000


def test_its_pdf_has_no_word_over_another(page: tuple[Any, list[str], Path]) -> None:
    _, _, results = page
    pdf = results.parent / "out" / "index.pdf"
    assert pdf_words.collisions(pdf_words.words(pdf)) == []


def test_suspect_runs_are_named_in_the_comparisons(page: tuple[Any, list[str], Path]) -> None:
    p, _, _ = page
    text = p.locator("body").inner_text()
    assert "beside a busy neighbour" in text
    assert "With those choices reversed" in text
