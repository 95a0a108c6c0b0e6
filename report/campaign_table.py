"""A campaign's results page from data/results/<campaign>/runs.csv: one self-contained HTML file
with the per-cell table (median and range over runs), every failed or missing run, and the plan's
provenance. It draws no figures and computes no intervals: the Quarto report with the stats
stage's tables does that; this page is what the workflow can show without them.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import os
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

METRICS = (
    ("rtt_net_p50_us", "RTT p50 (µs)"),
    ("rtt_net_p99_us", "RTT p99 (µs)"),
    ("server_cpu_cores", "server CPU (cores)"),
    ("server_tx_bytes_per_s", "server out (B/s)"),
    ("server_rx_bytes_per_s", "server in (B/s)"),
)
CELL_KEYS = ("prototype", "transport", "players", "workload", "params", "network_profile")


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 10 else f"{x:,.0f}"


def cell_rows(runs: list[dict[str, str]]) -> list[dict[str, Any]]:
    by_cell: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in runs:
        by_cell[r["cell_id"]].append(r)
    out = []
    for cell_id, rs in sorted(by_cell.items()):
        ok = [r for r in rs if r["status"] == "ok"]
        row: dict[str, Any] = {k: rs[0][k] for k in CELL_KEYS}
        row["cell_id"], row["runs_ok"], row["runs"] = cell_id, len(ok), len(rs)
        for key, _ in METRICS:
            vals = [v for v in (_num(r[key]) for r in ok) if v is not None]
            row[key] = (
                f"{_fmt(statistics.median(vals))} [{_fmt(min(vals))}, {_fmt(max(vals))}]"
                if vals
                else "n/a"
            )
        out.append(row)
    return out


def render(
    runs: list[dict[str, str]], plan: dict[str, Any], findings: dict[str, Any] | None = None
) -> str:
    e = html.escape
    found = "\n".join(f"<li>{e(f['statement'])}</li>" for f in (findings or {}).get("findings", []))
    cells = cell_rows(runs)
    bad = [r for r in runs if r["status"] != "ok"]
    head = "".join(f"<th>{e(k)}</th>" for k in CELL_KEYS) + "<th>runs ok</th>"
    head += "".join(f"<th>{e(label)}</th>" for _, label in METRICS)
    body = "\n".join(
        "<tr>"
        + "".join(f"<td>{e(str(c[k]))}</td>" for k in CELL_KEYS)
        + f"<td>{c['runs_ok']}/{c['runs']}</td>"
        + "".join(f"<td>{e(c[k])}</td>" for k, _ in METRICS)
        + "</tr>"
        for c in cells
    )
    failed = "\n".join(
        f"<li><code>{e(r['cell_id'])}/{e(r['run_id'])}</code>: {e(r['status'])} "
        f"{e(r.get('reason') or '')}</li>"
        for r in bad
    )
    unavailable = "\n".join(
        f"<li>{e(u['prototype'])}: {u['runs']} runs not runnable here: {e(u['reason'])}</li>"
        for u in plan.get("unavailable", [])
    )
    retried = sum(int(r["failed_attempts"] or 0) for r in runs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Netstick campaign {e(plan["campaign"])}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
th {{ background: #eee; }}
</style></head><body>
<h1>Campaign {e(plan["campaign"])}</h1>
<p>{len(runs)} planned runs of {len(cells)} cells; {len(runs) - len(bad)} ok, {len(bad)} failed or
not run; {retried} failed attempts were retried and are kept with the raw data. Seed {plan["seed"]};
runs ran in a seeded random order (plan.json). Campaign file
<code>{e(plan["campaign_file"])}</code> (sha256 {e(plan["campaign_sha256"][:16])}…).</p>
<p>Each value is the median over the cell's ok runs with the smallest and largest run in
brackets. RTT is the uniform network probe (kind net) over the measurement window.</p>
<h2>Findings</h2>
<p>Intervals are {int(100 * (findings or {}).get("ci_level", 0.95))} % bootstrap intervals across
runs (data/results/{e(plan["campaign"])}/cells.csv, comparisons.csv, findings.json).</p>
<ul>{found or "<li>none (no statistics yet)</li>"}</ul>
<h2>Cells</h2>
<table><tr>{head}</tr>
{body}
</table>
<h2>Failed and missing runs</h2>
<ul>{failed or "<li>none</li>"}</ul>
<h2>Not runnable here</h2>
<ul>{unavailable or "<li>none</li>"}</ul>
</body></html>
"""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.campaign_table", description=__doc__)
    ap.add_argument("runs_csv", type=Path)
    ap.add_argument("--plan", type=Path, required=True, help="data/raw/<campaign>/plan.json")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--findings", type=Path, default=None, help="findings.json of the stats stage")
    args = ap.parse_args(argv)
    with args.runs_csv.open(newline="") as f:
        runs = list(csv.DictReader(f))
    plan = json.loads(args.plan.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp-{os.getpid()}")
    findings = json.loads(args.findings.read_text()) if args.findings else None
    tmp.write_text(render(runs, plan, findings), encoding="utf-8")
    os.replace(tmp, args.out)
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
