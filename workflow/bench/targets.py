"""The benches' targets: thresholds judged against what was measured, and shown.

A bench with one figure per metric (harness, campaign, faults, ...) gives its targets as
{metric: (op, threshold, what)} and judges them with `target_rows`; bench-prototypes has
targets per cell (`Target`: a metric at one player count for some transports), judged by
`evaluate_targets`. Both make the same rows (metric, op, threshold, measured, pass, and what or
note), which `targets_text` shows in the terminal and `targets_markdown` as the README's table.
A value that was not measured fails its target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workflow.bench.record import markdown_table


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


@dataclass(frozen=True, slots=True)
class Target:
    """A threshold one metric must meet for some transports at one player count."""

    name: str
    metric: str
    op: str  # "<=" or ">="
    threshold: float
    transports: tuple[str, ...]
    players: int
    note: str = ""


def evaluate_targets(
    records: Sequence[Mapping[str, Any]], targets: Sequence[Target]
) -> list[dict[str, Any]]:
    """Each target for each of its transports that was run: measured value and verdict.

    A cell that failed or lacks the metric fails its targets (pass=false, measured=null).
    """
    by_cell = {(r["transport"], r["players"]): r for r in records}
    out = []
    for target in targets:
        for transport in target.transports:
            rec = by_cell.get((transport, target.players))
            if rec is None:
                continue  # not part of this bench's matrix
            value = rec.get(target.metric)
            entry: dict[str, Any] = {
                "target": target.name,
                "transport": transport,
                "players": target.players,
                "metric": target.metric,
                "op": target.op,
                "threshold": target.threshold,
                "measured": value,
                "pass": value is not None
                and rec.get("ok", False)
                and passes(target.op, target.threshold, value),
            }
            if not rec.get("ok", False):
                first_line = (rec.get("error") or "unknown error").splitlines()[0]
                entry["note"] = f"cell failed: {first_line}"
            elif value is None:
                entry["note"] = "metric not measured"
            elif target.note:
                entry["note"] = target.note
            out.append(entry)
    return out


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
