"""Benchmark results: the one writer of data/bench/<name>.json and the one formatter of their
tables.

Every benchmark writes its document through `write`: schema version and benchmark name first,
the provenance of the numbers (workflow.harness.provenance), paths inside the repository made
relative to it (the results are committed), written atomically and strictly (a statistic that
could not be computed is null, never NaN). Targets are judged by `target_rows` and shown by
`targets_markdown` (the README's tables) or `targets_text` (the terminal); result tables by
`markdown_table` and `text_table`.

    netstick bench show data/bench/prototypes.json   # the README's tables
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workflow.files import REPO, repo_relative, write_json
from workflow.harness import provenance

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
        "provenance": dict(prov) if prov is not None else provenance.collect(repo, binary),
        **body,
    }
    doc = repo_relative(doc, repo)
    write_json(out, doc, sort_keys=False, strict=True)
    return doc


# -- targets --------------------------------------------------------------------------------------


def passes(op: str, threshold: float, value: float) -> bool:
    if op == "<=":
        return value <= threshold
    if op == ">=":
        return value >= threshold
    raise ValueError(f"target operator {op!r}: expected '<=' or '>='")


def target_rows(
    measured: Mapping[str, Any], targets: Mapping[str, tuple[str, float, str]]
) -> list[dict[str, Any]]:
    """Each target (metric -> (op, threshold, what)) with its measured value and verdict; a
    missing value fails."""
    return [
        {
            "metric": metric,
            "op": op,
            "threshold": threshold,
            "what": what,
            "measured": measured.get(metric),
            "pass": measured.get(metric) is not None and passes(op, threshold, measured[metric]),
        }
        for metric, (op, threshold, what) in targets.items()
    ]


def _measured_text(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, int | float) else "not measured"


def _scope(row: Mapping[str, Any]) -> str:
    """Which cell a target row is about, when it is about one (bench-prototypes)."""
    if "transport" in row:
        return f"{row['transport']} {row['players']} players"
    return ""


def targets_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line per target for the terminal: verdict, metric, measured, required, and why."""
    lines = []
    for t in rows:
        head = f"{'PASS' if t['pass'] else 'FAIL'}  {t['metric']:<28}"
        scope = _scope(t)
        if scope:
            head += f" {scope:<20}"
        why = t.get("note") or t.get("what") or ""
        lines.append(
            f"{head} {_measured_text(t['measured']):>12} (target {t['op']} {t['threshold']:g})"
            + (f": {why}" if why else "")
        )
    return "\n".join(lines)


def targets_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The targets as a Markdown table: measured, required, verdict (failures in bold)."""
    scoped = any("transport" in t for t in rows)
    header = ["target", *(["transport", "players"] if scoped else []), "measured", "required"]
    body = []
    for t in rows:
        cells = [str(t["metric"])]
        if scoped:
            cells += [str(t.get("transport", "")), str(t.get("players", ""))]
        cells += [_measured_text(t["measured"]), f"{t['op']} {t['threshold']:g}"]
        cells.append("pass" if t["pass"] else "**fail**")
        body.append(cells)
    numeric = [False, *([False, True] if scoped else []), True, True, False]
    return markdown_table([*header, "verdict"], body, numeric)


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


def markdown(doc: Mapping[str, Any]) -> str:
    """A bench record as the README quotes it: the records table where there is one (medians
    of the repetitions), then the targets."""
    parts = [records_markdown(doc["records"])] if doc.get("records") else []
    parts.append(targets_markdown(doc.get("targets", [])))
    return "\n\n".join(parts)
