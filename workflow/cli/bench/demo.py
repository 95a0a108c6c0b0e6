"""demo: a quick look at every transport on this machine, as one aligned table."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from workflow.cli.bench.localrun import LocalRunError, LocalRunResult, RunConfig, run_local

DEMO_PLAYERS = 20
DEMO_DURATION_S = 6.0
DEMO_WARMUP_S = 1.0
DEMO_PARAMS = {"size": "100", "rate": "60"}

COLUMNS = (
    "transport",
    "players",
    "connect_s",
    "RTT p50 µs",
    "RTT p99 µs",
    "late p99 µs",
    "server cores",
    "client cores",
    "server RSS MB",
    "client RSS MB",
    "loss %",
    "status",
)


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def table_row(res: LocalRunResult) -> list[str]:
    loss = None if res.probe_loss_ratio is None else 100 * res.probe_loss_ratio
    status = "ok" if res.ok else "FAILED"
    if res.ok and res.contract_violations:
        status = f"ok, {len(res.contract_violations)} log violations"
    return [
        res.transport,
        str(res.players_connected if res.players_connected is not None else res.players),
        _num(res.connect_s, ".3f"),
        _num(res.rtt_p50_us, ".0f"),
        _num(res.rtt_p99_us, ".0f"),
        _num(res.send_late_p99_us, ".0f"),
        _num(res.server_cpu_cores, ".3f"),
        _num(res.client_cpu_cores, ".3f"),
        _mb(res.server_rss_bytes),
        _mb(res.client_rss_bytes),
        _num(loss, ".2f"),
        status,
    ]


def format_table(rows: Sequence[Sequence[str]], header: Sequence[str] = COLUMNS) -> str:
    """Columns padded to their widest cell; text left-aligned, numbers right-aligned."""
    all_rows = [list(header), *map(list, rows)]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]
    numeric = [
        all(_looks_numeric(r[i]) for r in all_rows[1:]) and len(all_rows) > 1
        for i in range(len(header))
    ]

    def fmt(row: list[str]) -> str:
        cells = [
            cell.rjust(w) if num else cell.ljust(w)
            for cell, w, num in zip(row, widths, numeric, strict=True)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(all_rows[0]), rule, *(fmt(r) for r in all_rows[1:])])


def _looks_numeric(cell: str) -> bool:
    if cell == "-":
        return True
    try:
        float(cell)
    except ValueError:
        return False
    return True


def run_demo(
    binary: Path,
    out_dir: Path,
    transports: Sequence[str],
    players: int = DEMO_PLAYERS,
    duration_s: float = DEMO_DURATION_S,
    warmup_s: float = DEMO_WARMUP_S,
    pin: bool = False,
    progress: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
) -> tuple[str, bool]:
    """Run each transport once; return the table (plus error details) and whether all were ok."""
    rows: list[list[str]] = []
    errors: list[str] = []
    for transport in transports:
        cfg = RunConfig(
            binary=binary,
            transport=transport,
            players=players,
            duration_s=duration_s,
            warmup_s=warmup_s,
            run_dir=out_dir / transport,
            workload="stream",
            params=DEMO_PARAMS,
            run_id=f"demo-{transport}",
            pin_server_cpu=0 if pin else None,
            pin_client_cpu=1 if pin else None,
        )
        progress(f"demo: {transport}, {players} players, {duration_s:g} s ...")
        try:
            res = run_local(cfg)
        except LocalRunError as exc:
            rows.append([transport, str(players), *["-"] * (len(COLUMNS) - 3), "FAILED"])
            errors.append(f"{transport}: {exc}")
            continue
        rows.append(table_row(res))
        if res.error:
            errors.append(f"{transport}: {res.error}")
        errors.extend(f"{transport}: {v}" for v in res.contract_violations)
    text = format_table(rows)
    if errors:
        text += "\n\nProblems:\n" + "\n".join(errors)
    text += f"\n\nLogs and monitor samples: {out_dir}"
    return text, not any(r[-1] == "FAILED" for r in rows)
