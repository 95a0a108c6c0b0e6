"""Render data/bench/prototypes.json as a Markdown table (the README quotes it).

python -m report.bench_table data/bench/prototypes.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (header, record key, format)
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


def _cell(rec: dict[str, Any], key: str, fmt: str) -> str:
    value = rec.get(key)
    if value is None:
        return "—"
    if key.endswith("_bytes"):
        value = value / 1e6
    if key == "probe_loss_ratio":
        value = value * 100
    return fmt.format(value)


def records_table(doc: dict[str, Any]) -> str:
    """One row per (transport, players); failed cells show their error."""
    lines = [
        "| " + " | ".join(h for h, _, _ in COLUMNS) + " |",
        "|" + "|".join("---" if i < 1 else "---:" for i in range(len(COLUMNS))) + "|",
    ]
    for rec in doc["records"]:
        if not rec.get("ok"):
            error = (rec.get("error") or "failed").splitlines()[0].replace("|", "/")
            lines.append(f"| {rec['transport']} | {rec['players']} | failed: {error} |")
            continue
        lines.append("| " + " | ".join(_cell(rec, k, f) for _, k, f in COLUMNS) + " |")
    return "\n".join(lines)


def targets_table(doc: dict[str, Any]) -> str:
    """Each target with the measured value and the verdict."""
    lines = [
        "| target | transport | players | measured | required | verdict |",
        "|---|---|---:|---:|---:|---|",
    ]
    for t in doc["targets"]:
        m = t["measured"]
        shown = f"{m:.4g}" if isinstance(m, int | float) else "not measured"
        verdict = "pass" if t["pass"] else "**fail**"
        lines.append(
            f"| {t['metric']} | {t['transport']} | {t['players']} | {shown} | "
            f"{t['op']} {t['threshold']:g} | {verdict} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="a bench-prototypes JSON file")
    args = parser.parse_args(argv)
    try:
        doc = json.loads(args.result.read_text())
        print(records_table(doc))
        print()
        print(targets_table(doc))
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        print(f"bench_table: {args.result}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
