"""The nightly regression report: draws what stats.history computed.

    netstick history render TABLES --out report/_output/history/index.html

TABLES holds stats.history's trends.csv, verdicts.csv and history.json. Here the findings become
sentences (report.sentences) and the metric's unit the shown one, written as report.json
(--figures, by default a temporary directory) beside which report/history.qmd reads the tables.
Nothing is computed here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Final

from report import sentences
from report.render import render as render_qmd
from workflow.files import REPO, write_json

SOURCE: Final = Path(__file__).with_name("history.qmd")
DEFAULT_OUT: Final = REPO / "report" / "_output" / "history" / "index.html"


class HistoryReportError(ValueError):
    """The tables directory cannot be drawn; the message names the file."""


def load(tables: Path) -> dict[str, Any]:
    doc = sentences.load_findings(
        tables / "history.json", "netstick history compute", HistoryReportError
    )
    for name in ("trends.csv", "verdicts.csv"):
        if not (tables / name).is_file():
            raise HistoryReportError(f"{tables / name}: missing; run `netstick history compute`")
    return doc


def shape(tables: Path) -> dict[str, Any]:
    """report.json: the findings' sentences and the metric's shown unit with the factor that
    takes stored values to it."""
    doc = load(tables)
    factor, shown = sentences.convert(1.0, str(doc.get("unit", "count")))
    return {
        "sentences": [sentences.sentence(f) for f in doc["findings"]],
        "unit_shown": shown,
        "unit_factor": factor,
    }


def render(tables: Path, out: Path, figures: Path | None = None) -> str:
    """Render the history report of the tables into out; report.json goes to figures, or to a
    temporary directory. Returns the engine used."""
    with tempfile.TemporaryDirectory(prefix="netstick-history-") as tmp:
        fig_dir = figures if figures is not None else Path(tmp)
        write_json(fig_dir / "report.json", shape(tables), sort_keys=False, strict=True)
        params = {"results": str(tables.resolve()), "figures": str(fig_dir.resolve())}
        return render_qmd(params, out, source=SOURCE)
