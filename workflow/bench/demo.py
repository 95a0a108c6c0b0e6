"""demo (`netstick demo`): a quick look at every transport on this machine, as one aligned table.

Each transport is one run of the harness, as bench-prototypes runs it (cells.py: stream
workload, 100 B at 60 Hz, network profile lan), without CPU pinning and with one repetition:
the same numbers from the same code, only fewer and shorter.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from workflow.bench import cells, record

DEMO_PLAYERS = 20
DEMO_DURATION_S = 6.0
HEADER = [*(h for h, _, _ in record.RESULT_COLUMNS), "status"]


def run(
    out_dir: Path,
    *,
    transports: Sequence[str] = cells.TRANSPORTS,
    players: int = DEMO_PLAYERS,
    duration_s: float = DEMO_DURATION_S,
    binary: Path | None = None,
    prototype: Path = cells.REFERENCE_MANIFEST,
    progress: cells.Progress = cells.print_progress,
) -> tuple[str, bool]:
    """Run each transport once; return the table (plus error details) and whether all were ok."""
    manifest = cells.manifest_for(binary, out_dir, prototype)
    records = []
    for transport in transports:
        cell = cells.bench_cell(
            transport,
            players,
            1,
            duration_s=duration_s,
            pin=False,
            prototype=manifest,
            campaign="demo",
        )
        progress(f"demo: {transport}, {players} players, {duration_s:g} s ...")
        records.append(cells.run_one(cell, out_dir / transport))
    rows = [
        [*row, "ok" if rec["ok"] else "FAILED"]
        for row, rec in zip(record.result_rows(records, show_errors=False), records, strict=True)
    ]
    text = record.text_table(HEADER, rows)
    errors = [f"{r['transport']}: {r['error']}" for r in records if not r["ok"]]
    if errors:
        text += "\n\nProblems:\n" + "\n".join(errors)
    text += f"\n\nLogs, monitor samples and meta.json of each run: {out_dir}"
    return text, all(r["ok"] for r in records)
