"""Benchmark results: the one writer of data/bench/<name>.json and the one formatter of their
tables.

Every benchmark writes its document through `write`: schema version and benchmark name first,
the provenance of the numbers (workflow.harness.environment), paths inside the repository made
relative to it (the results are committed), written atomically and strictly (a statistic that
could not be computed is null, never NaN). Result tables are made by `markdown_table` (the
README's, see show.py) and `text_table` (the terminal's); the targets' by targets.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workflow.files import REPO, repo_relative, write_json
from workflow.harness import environment

RESULT_SCHEMA = 1
MISSING = "—"  # a value that was not measured, in every table


def write(
    out: Path,
    benchmark: str,
    body: Mapping[str, Any],
    *,
    prov: Mapping[str, Any] | None = None,
    binary: Path | None = None,
    schema: int = RESULT_SCHEMA,
    repo: Path = REPO,
) -> dict[str, Any]:
    """Write one benchmark's document to out and return it as written.

    prov: provenance collected earlier (a benchmark that rewrites its file after every cell
    keeps the provenance of its start); else collected now, with binary's Go version.
    schema: the version of this benchmark's document, raised when its shape changes.
    """
    doc: dict[str, Any] = {
        "schema": schema,
        "benchmark": benchmark,
        "provenance": dict(prov) if prov is not None else environment.collect(repo, binary),
        **body,
    }
    doc = repo_relative(doc, repo)
    write_json(out, doc, sort_keys=False, strict=True)
    return doc


# -- result tables --------------------------------------------------------------------------------

# The transport table (README, demo): header, record key, format. Bytes are shown in MB and
# ratios in percent.
RESULT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("transport", "transport", "{}"),
    ("players", "players", "{}"),
    ("connect s", "connect_s", "{:.2f}"),
    ("RTT p50 µs", "rtt_p50_us", "{:.0f}"),
    ("RTT p99 µs", "rtt_p99_us", "{:.0f}"),
    ("late p99 µs", "send_late_p99_us", "{:.0f}"),
    ("server cores", "server_cpu_cores", "{:.3f}"),
    ("client cores", "client_cpu_cores", "{:.3f}"),
    ("players/client core", "players_per_client_core", "{:.0f}"),
    ("server RSS MB", "server_rss_bytes", "{:.1f}"),
    ("client RSS MB", "client_rss_bytes", "{:.1f}"),
    ("probe loss %", "probe_loss_ratio", "{:.2f}"),
)


def result_cell(rec: Mapping[str, Any], key: str, fmt: str) -> str:
    value = rec.get(key)
    if value is None:
        return MISSING
    if key.endswith("_bytes"):
        value = value / 1e6
    elif key.endswith("_ratio"):
        value = value * 100
    return fmt.format(value)


def result_rows(
    records: Sequence[Mapping[str, Any]], *, show_errors: bool = True
) -> list[list[str]]:
    """One row of RESULT_COLUMNS per record; a failed record keeps its transport and players
    and shows its error's first line where the numbers would be (or nothing, when the caller
    lists the errors itself)."""
    rows = []
    for rec in records:
        if rec.get("ok", True):
            rows.append([result_cell(rec, key, fmt) for _, key, fmt in RESULT_COLUMNS])
            continue
        error = (rec.get("error") or "failed").splitlines()[0].replace("|", "/")
        filler = [MISSING] * (len(RESULT_COLUMNS) - 3)
        first = f"failed: {error}" if show_errors else MISSING
        rows.append([str(rec["transport"]), str(rec["players"]), first, *filler])
    return rows


def records_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The transport table the README quotes."""
    header = [h for h, _, _ in RESULT_COLUMNS]
    numeric = [False, *([True] * (len(header) - 1))]
    return markdown_table(header, result_rows(records), numeric)


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]
) -> str:
    """A Markdown table; numeric columns are right-aligned."""
    rule = "|" + "|".join("---:" if num else "---" for num in numeric) + "|"
    lines = ["| " + " | ".join(cells) + " |" for cells in [header, *rows]]
    return "\n".join([lines[0], rule, *lines[1:]])


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; text left-aligned, numbers right-aligned."""
    all_rows = [list(header), *map(list, rows)]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]
    numeric = [
        len(all_rows) > 1 and all(_looks_numeric(r[i]) for r in all_rows[1:])
        for i in range(len(header))
    ]

    def line(row: list[str]) -> str:
        cells = [
            cell.rjust(w) if num else cell.ljust(w)
            for cell, w, num in zip(row, widths, numeric, strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(all_rows[0]), rule, *(line(r) for r in all_rows[1:])])


def _looks_numeric(cell: str) -> bool:
    if cell in (MISSING, "-"):
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True
