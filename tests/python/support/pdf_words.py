"""Words of a rendered PDF with their boxes (poppler's pdftotext -bbox), and the words that print
over each other: a table whose columns overlap ("RTTRTT", "[23, 24.5]25.3 %") shows up as two
words on one line whose boxes intersect.

    .venv/bin/python tests/python/support/pdf_words.py report/_output/quick/index.pdf
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Boxes of neighbouring words may touch, and a glyph's box may reach a little into the next one
# (kerning, italics): only an intersection wider than this many points, and over most of the
# smaller word's height, is a collision.
MIN_OVERLAP_PT = 1.0
MIN_SHARED_HEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Word:
    page: int
    text: str
    x0: float
    y0: float
    x1: float
    y1: float


def words(pdf: Path) -> list[Word]:
    """Every word of the PDF with its box (points, origin at the page's top left)."""
    if shutil.which("pdftotext") is None:
        raise RuntimeError("pdftotext (poppler-utils) is not installed")
    done = subprocess.run(
        ["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"pdftotext {pdf} failed: {done.stderr[-1000:]}")
    root = ET.fromstring(done.stdout)
    out: list[Word] = []
    for n, page in enumerate(root.iter("{http://www.w3.org/1999/xhtml}page"), 1):
        for w in page.iter("{http://www.w3.org/1999/xhtml}word"):
            box = [float(w.attrib[k]) for k in ("xMin", "yMin", "xMax", "yMax")]
            out.append(Word(n, w.text or "", *box))
    return out


def collisions(found: Sequence[Word]) -> list[tuple[Word, Word]]:
    """Pairs of words on one page whose boxes overlap (MIN_OVERLAP_PT wide, sharing at least
    MIN_SHARED_HEIGHT of the lower word's height)."""
    out: list[tuple[Word, Word]] = []
    by_page: dict[int, list[Word]] = {}
    for w in found:
        by_page.setdefault(w.page, []).append(w)
    for page in by_page.values():
        page.sort(key=lambda w: w.x0)
        for i, a in enumerate(page):
            for b in page[i + 1 :]:
                if b.x0 >= a.x1 - MIN_OVERLAP_PT:
                    break
                width = min(a.x1, b.x1) - b.x0
                height = min(a.y1, b.y1) - max(a.y0, b.y0)
                shorter = min(a.y1 - a.y0, b.y1 - b.y0)
                if width > MIN_OVERLAP_PT and shorter > 0 and height / shorter > MIN_SHARED_HEIGHT:
                    out.append((a, b))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdf", type=Path, nargs="+")
    args = parser.parse_args(argv)
    bad = 0
    for pdf in args.pdf:
        for a, b in collisions(words(pdf)):
            bad += 1
            print(f"{pdf} page {a.page}: {a.text!r} and {b.text!r} overlap at y {a.y0:.0f}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
