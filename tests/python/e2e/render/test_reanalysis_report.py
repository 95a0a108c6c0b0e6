"""The Net-Celerity re-analysis drawn with R (report/reanalysis.py, report/net-celerity.qmd) from
the real pipeline on the vendored data: a self-contained HTML page under 5 MiB with one real
picture per figure, stating every finding and flaw verbatim."""

from __future__ import annotations

import base64
import html
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from report import reanalysis as rea_report
from stats import reanalysis as rea

from support import pdf_words
from support.marks import needs_r
from support.paths import REPO

pytestmark = needs_r

DATA = REPO / "data" / "external" / "net-celerity"
QMD = rea_report.QMD
# The figures of report/net-celerity.qmd (chunk labels), one <img> each in the HTML.
FIGURES = (
    "rtt-box",
    "rtt-scaling",
    "cpu",
    "memory",
    "network",
    "variance",
    "warm-p50",
    "frame-hist",
)
MAX_HTML_BYTES = 5 * 2**20


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The re-analysis of the vendored data: its tables and findings."""
    out = tmp_path_factory.mktemp("reanalysis") / "results"
    rea.compute(out, DATA)
    return out


@pytest.fixture(scope="module")
def shown(results: Path) -> dict[str, Any]:
    """report.json: what the report shapes from the tables (sentences, flaws)."""
    return rea_report.shape(results)[1]


@pytest.fixture(scope="module")
def rendered(results: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("report") / "index.html"
    rea_report.render(results, out)
    assert out.stat().st_size < MAX_HTML_BYTES
    return out.read_text(encoding="utf-8")


def _text(page: str) -> str:
    """The page's visible text: tags dropped, entities decoded, whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", body))
    # pandoc's smart punctuation curls the quotes; the words are the same
    text = text.translate(
        str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
    )
    return re.sub(r"\s+", " ", text)


def test_report_is_self_contained(rendered: str) -> None:
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']?\s*(https?://[^"'\s>]*)""", rendered, re.I)
    assert links == []
    srcs = re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", rendered)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    for s in srcs:  # real, non-empty PNGs
        png = base64.b64decode(s.removeprefix("data:image/png;base64,"))
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_report_has_one_image_per_figure(rendered: str) -> None:
    chunks = re.findall(r"^```\{r ([\w-]+)[^}]*fig\.cap", QMD.read_text(), re.M)
    assert tuple(chunks) == FIGURES
    assert len(re.findall(r"<img\b", rendered)) == len(FIGURES)


def test_report_states_the_findings_verbatim(rendered: str, shown: dict[str, Any]) -> None:
    text = _text(rendered)
    assert len(shown["sentences"]) >= 10
    for said in shown["sentences"]:
        assert re.sub(r"\s+", " ", said) in text, said
    for flaw in shown["dataset_flaws"]:
        assert flaw in text, flaw
    assert "Each configuration ran once." in text


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) missing")
def test_pdf_words_never_print_over_each_other(results: Path, tmp_path: Path) -> None:
    """Its tables have up to 12 columns: in the PDF no word may overlap another."""
    pdf = tmp_path / "index.pdf"
    rea_report.render(results, tmp_path / "index.html", pdf=pdf)
    assert pdf_words.collisions(pdf_words.words(pdf)) == []
