"""Checks of a rendered report, shared by the report tests and the workflow tests."""

from __future__ import annotations

import base64
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

IMG = re.compile(r'<img src="(data:image/png;base64,[^"]+)" alt="([^"]*)"')
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.IGNORECASE)


def external_references(page: str) -> list[str]:
    """src/href attributes that would load something from the network."""
    return [page[m.start() : m.start() + 80] for m in EXTERNAL.finditer(page)]


def figures(page: str) -> dict[str, bytes]:
    """Caption (the img's alt text) -> PNG bytes of every embedded figure."""
    out = {}
    for m in IMG.finditer(page):
        out[html.unescape(m.group(2))] = base64.b64decode(m.group(1).split(",", 1)[1])
    return out


def missing_figures(page: str, results: Path) -> list[str]:
    """Ids of the figures the manifest expects that the page does not show with their caption."""
    manifest = json.loads((results / "figures" / "manifest.json").read_text())
    drawn = figures(page)
    return [
        f["id"]
        for f in manifest["figures"]
        if f["expected"] and not drawn.get(f["caption"], b"").startswith(b"\x89PNG")
    ]


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.section: str | None = None
        self.tables: dict[str, list[list[str]]] = {}
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._current: list[list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and "section" in (a.get("class") or "") and a.get("id"):
            self.section = a["id"]
        elif tag == "table" and self.section is not None:
            self._current = self.tables.setdefault(self.section, [])
        elif tag == "tr" and self._current is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._current is not None and self._row is not None:
            self._current.append(self._row)
            self._row = None
        elif tag == "table":
            self._current = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[list[str]]]:
    """Rows (header first) of the tables in each section, by the section's id."""
    p = _Tables()
    p.feed(page)
    return p.tables


def signif(x: float, digits: int = 3) -> float:
    """R's signif(): the value the report prints."""
    return float(f"{x:.{digits}g}")


def text(page: str) -> str:
    """The page's visible text with entities resolved and whitespace collapsed."""
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.DOTALL)
    body = re.sub(r"</?(?:code|em|strong|span|a)\b[^>]*>", "", body)  # inline: no gap
    body = re.sub(r"<[^>]+>", " ", body)
    # pandoc typesets apostrophes; the statements in findings.json use plain ones
    return re.sub(r"\s+", " ", html.unescape(body)).replace("\u2019", "'")


# The programs a report tells its reader to run (the check-list, the commands to reproduce).
COMMAND_STARTS = (
    "make",
    "git",
    ".venv/bin/snakemake",
    ".venv/bin/netstick",
    "snakemake",
    "netstick",
)
_CODE = re.compile(r"<code[^>]*>(.*?)</code>", re.DOTALL)


def commands(page: str) -> list[str]:
    """Every command the page shows as code (inline code, and each line of a code block that is
    not a comment), as a reader would copy it: tags removed, entities resolved."""
    out: list[str] = []
    for block in _CODE.findall(page):
        for line in html.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            line = line.strip()
            if line.split(" ", 1)[0] in COMMAND_STARTS:
                out.append(line)
    return out
