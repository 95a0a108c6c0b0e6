"""The nightly history's two reports drawn with R (report/history.py, history.qmd): the trends
of consecutive nights, and tonight's decision with its confirming re-run; both self-contained,
one figure, every sentence shown."""

from __future__ import annotations

from pathlib import Path

from report import history
from stats.history import trends
from stats.history.decide import confirm, decide, write_decision
from stats.history.store import read_history

from support import report_checks as rc
from support.history_nights import (
    STORE_CELLS,
    TREND_CELLS,
    import_nights,
    night_runs,
    trend_nights,
)
from support.marks import needs_r

pytestmark = needs_r


def test_history_report_renders_self_contained(tmp_path: Path) -> None:
    tables = tmp_path / "tables"
    trends.compute(trend_nights(tmp_path), tables)
    out = tmp_path / "index.html"
    history.render(tables, out)
    page = out.read_text()
    assert rc.external_references(page) == []
    assert len(rc.figures(page)) == 1
    words = rc.text(page)
    said = history.shape(tables)["sentences"]
    assert said
    for line in said:
        assert line in words, line
    rows = rc.tables(page)["newest-night-against-the-one-before"]
    assert len(rows) == 1 + len(TREND_CELLS)


def test_the_decision_is_drawn_with_its_sentences_confirmed_first(tmp_path: Path) -> None:
    hist = import_nights(tmp_path, slow_last=1.3)
    table = read_history(hist, "nightly")
    doc = decide(table, k=3)
    done = confirm(doc, table, night_runs({STORE_CELLS[0]: 1.3}, seed=9, cells=(STORE_CELLS[0],)))
    tables = tmp_path / "tables"
    write_decision(done, table, tables / "regressions.json")
    shown = history.shape(tables)
    out = tmp_path / "index.html"
    history.render(tables, out)
    page = out.read_text()
    assert rc.external_references(page) == []
    assert len(rc.figures(page)) == 1
    words = rc.text(page)
    assert shown["decision"]["sentences"][0].startswith(f"{STORE_CELLS[0]}: regression")
    for line in shown["decision"]["sentences"]:
        assert line in words, line
