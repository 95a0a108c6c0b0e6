"""The report's answer: the campaign's question and a table of every planned comparison.

    netstick report CAMPAIGN --step figures   ->   figures/answer.csv, figures/comparisons-table.csv

Both tables are shaped from the stats stage's comparison findings (findings.json; computed in
stats/comparisons.py): per comparison both medians with their intervals, the ratio with its
interval, the verdict in words (report/sentences.py) and the scale that gives a number its
meaning: a round trip as a share of one frame at the tick rate, beside the round trip the network
profile itself adds; server CPU as a share of one core. answer.csv holds the ANSWER_METRICS rows
(the first screen), comparisons-table.csv every row, with p, Cliff's delta and the suspect runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from report import sentences

# The metrics of the first screen's table: how fast, and at what cost.
ANSWER_METRICS = ("rtt_net_p50_us", "server_cpu_cores")
CONTEXT_KEYS = ("players", "workload", "params", "network_profile", "duration_s")


def _context_label(ctx: Mapping[str, Any], varying: Sequence[str]) -> str:
    """The keys that tell this campaign's contexts apart, e.g. '20 players' or
    '1 player · turbulent'."""
    parts = []
    for k in varying:
        v = ctx.get(k)
        if k == "players":
            parts.append(sentences.players_text(v))
        elif k == "params":
            parts.append(sentences.params_label(v) or "no parameters")
        elif k == "duration_s":
            parts.append(f"{sentences.fmt(v)} s")
        else:
            parts.append(str(v))
    return " · ".join(parts)


def _varying(found: Sequence[Mapping[str, Any]]) -> list[str]:
    """The context keys whose values differ between comparisons (players when none does)."""
    seen = {k: {repr(f["context"].get(k)) for f in found} for k in CONTEXT_KEYS}
    varying = [k for k in CONTEXT_KEYS if len(seen[k]) > 1]
    return varying or ["players"]


def scale_text(f: Mapping[str, Any]) -> str:
    """What makes the two medians mean something to a game."""
    metric, a, b = f["context"]["metric"], f.get("a_median"), f.get("b_median")
    if metric.startswith("rtt_") and f.get("frame_us"):
        frame = f["frame_us"]
        hz = 1e6 / frame
        text = (
            f"{_pct(a, frame)} / {_pct(b, frame)} of a {sentences.fmt(hz)} Hz frame "
            f"({sentences.fmt(frame / 1e3)} ms)"
        )
        if f.get("profile_rtt_us"):
            shown = sentences.fmt(f["profile_rtt_us"] / 1e3)
            text += f"; the profile alone adds {shown} ms"
        return text
    if metric == "server_cpu_cores":
        return f"{_pct(a, 1.0)} / {_pct(b, 1.0)} of one core"
    return ""


def _pct(value: float | None, of: float) -> str:
    if value is None:
        return "n/a"
    share = 100 * value / of
    return f"{sentences.fmt(share, 2)} %"


def _versions_only(f: Mapping[str, Any]) -> bool:
    """A comparison of two versions of one transport (kcp@1.10 against kcp@1.11)."""
    ctx = f["context"]
    return ctx["a"].partition("@")[0] == ctx["b"].partition("@")[0]


def answer_findings(findings: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The comparisons that answer a campaign: transport against transport; versions of one
    transport only in a campaign that compares nothing else (the versions figure and the
    nightly's history follow versions)."""
    found = [f for f in findings if f.get("kind") == "comparison"]
    transports = [f for f in found if not _versions_only(f)]
    return transports or found


def rows(
    findings: Sequence[Mapping[str, Any]], metrics: Sequence[str] | None = None
) -> pl.DataFrame:
    """One row per comparison finding (of these metrics), in a reading order: context, pair,
    metric."""
    found = [f for f in findings if f.get("kind") == "comparison"]
    varying = _varying(found)
    order = {m: i for i, m in enumerate(ANSWER_METRICS)}

    def key(f: Mapping[str, Any]) -> tuple[Any, ...]:
        ctx = f["context"]
        return (*(str(ctx.get(k)).zfill(8) for k in varying), ctx["a"], ctx["b"],
                order.get(ctx["metric"], 99), ctx["metric"])  # fmt: skip

    out = []
    for f in sorted(found, key=key):
        ctx = f["context"]
        if metrics is not None and ctx["metric"] not in metrics:
            continue
        unit = f.get("metric_unit") or "us"
        a_value = sentences.value_text(f.get("a_median"), f.get("a_interval"), unit)
        b_value = sentences.value_text(f.get("b_median"), f.get("b_interval"), unit)
        out.append(
            {
                "where": _context_label(ctx, varying),
                "metric": sentences.metric_label(ctx["metric"]),
                "a": f"{ctx['a']} {a_value}",
                "b": f"{ctx['b']} {b_value}",
                "ratio": sentences.ratio_text(f.get("estimate"), f.get("interval")),
                "verdict": sentences.verdict_words(f),
                "scale": scale_text(f),
                "p": sentences.fmt(f.get("p_adjusted"), 2),
                "runs": "/".join(str(n) for n in f.get("n_runs") or []),
                "suspects": sentences.suspects_text(f),
                "note": "; ".join(t for t in (f.get("note"), sentences.order_text(f)) if t),
            }
        )
    schema = dict.fromkeys(
        ("where", "metric", "a", "b", "ratio", "verdict", "scale", "p", "runs", "suspects", "note"),
        pl.String,
    )
    return pl.DataFrame(out, schema=schema)


def question(
    plan: Mapping[str, Any], answer: pl.DataFrame, found: Sequence[Mapping[str, Any]]
) -> str:
    """The campaign's question: its own (plan.json's question), else one worded from the
    comparisons planned."""
    if plan.get("question"):
        return str(plan["question"])
    names = sorted({f["context"][s] for f in answer_findings(found) for s in "ab"})
    if not names:
        return "What did each configuration measure?"
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    where = list(dict.fromkeys(answer["where"].to_list())) if answer.height else []
    at = f", at {' and '.join(where)}" if 0 < len(where) <= 3 else ""
    return f"Which of {listed} is faster and cheaper{at}?"
