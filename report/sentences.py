"""Every sentence a report says about a finding, and the one table of shown units.

The stats stage writes findings as records (findings.json: kind, context, estimate, interval,
unit, level, ...) with numbers in their stored units and no prose. Here, and only here, a
record becomes a sentence (`sentence`, one writer per kind) and a stored unit becomes the
shown one (`convert`, one table: SHOWN). The campaign report, the CLI and the tests all print
these sentences, so a statement reads the same wherever it appears.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

# Stored unit -> (shown unit, divisor from the stored value to the shown one). Every unit a
# finding or a metric may carry is here; figures, tables and sentences convert through it alone.
SHOWN: dict[str, tuple[str, float]] = {
    "us": ("ms", 1e3),
    "ms": ("ms", 1.0),
    "s": ("s", 1.0),
    "us/player": ("ms/player", 1e3),
    "cores": ("cores", 1.0),
    "bytes": ("MiB", 2.0**20),
    "bytes/s": ("KiB/s", 2.0**10),
    "packets/s": ("packets/s", 1.0),
    "players": ("players", 1.0),
    "ratio": ("ratio", 1.0),
    "fraction": ("fraction", 1.0),
    "count": ("count", 1.0),
    "us/msg": ("µs/msg", 1.0),  # per message µs stay µs: a few of them, not thousandths of a ms
    "instr/msg": ("instructions/msg", 1.0),
    # the Net-Celerity re-analysis stores its tables' units (ms and MiB, as the logs had them)
    "ms/player": ("ms/player", 1.0),
    "cores/player": ("cores/player", 1.0),
    "MiB/player": ("MiB/player", 1.0),
    "MiB/s": ("MiB/s", 1.0),
}

Finding = Mapping[str, Any]
Writer = Callable[[Finding], str]
_WRITERS: dict[str, Writer] = {}


def load_findings(path: Path, command: str, error: type[Exception] = ValueError) -> dict[str, Any]:
    """A stats stage's findings document (an object with a findings list); error names the file
    and the command that writes it."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not readable ({exc}); run `{command}` first") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise error(f"{path}: expected an object with a findings list")
    return doc


def convert(value: float | None, unit: str) -> tuple[float | None, str]:
    """(value in the shown unit, the shown unit); None stays None."""
    try:
        shown, divisor = SHOWN[unit]
    except KeyError:
        raise ValueError(f"unit {unit!r}: not one of {', '.join(SHOWN)}") from None
    if value is None or not math.isfinite(value):
        return None, shown
    return value / divisor, shown


def fmt(value: float | None, digits: int = 3) -> str:
    """value to `digits` significant digits, without an exponent (1230, 0.0123); "n/a" for
    none."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return np.format_float_positional(float(f"{value:.{digits}g}"), trim="-")


def params_label(params: str | Mapping[str, Any] | None) -> str:
    """'{"size": "S", "rate_hz": 30}' (or that dict) -> 'rate_hz=30 size=S'; '' for no
    parameters. Sentences and figures name a cell's workload parameters this way."""
    doc: Any = params
    if isinstance(params, str):
        try:
            doc = json.loads(params) if params else {}
        except ValueError:
            return params
    if not isinstance(doc, Mapping):
        return ""
    return " ".join(f"{k}={v}" for k, v in sorted(doc.items()))


def writes(kind: str) -> Callable[[Writer], Writer]:
    """Register the writer of one kind of finding."""

    def register(writer: Writer) -> Writer:
        if kind in _WRITERS:
            raise ValueError(f"finding kind {kind!r} already has a writer")
        _WRITERS[kind] = writer
        return writer

    return register


def kinds() -> tuple[str, ...]:
    """Every kind of finding that has a sentence."""
    return tuple(_WRITERS)


def sentence(finding: Finding) -> str:
    kind = finding.get("kind")
    writer = _WRITERS.get(str(kind))
    if writer is None:
        raise ValueError(
            f"finding kind {kind!r}: no sentence for it (known: {', '.join(_WRITERS)})"
        )
    return writer(finding)


# -- the campaign's findings (stats/analyse.py) --------------------------------------------------


def _rtt_label(metric: str) -> str:
    """rtt_net_p50_us -> 'RTT p50' (the probe's quantile)."""
    m = re.fullmatch(r"rtt_[a-z]+_(p\d+)_us", metric)
    return f"RTT {m.group(1)}" if m else metric


def _bounds(f: Finding, show: Callable[[float | None], str]) -> str:
    low, high = f.get("interval") or (None, None)
    return f"[{show(low)}, {show(high)}]"


def _shown(value: float | None, unit: str) -> float | None:
    return convert(value, unit)[0]


def _name(ctx: Mapping[str, Any]) -> str:
    return f"{ctx.get('transport')} {ctx.get('workload')}"


@writes("scaling")
def _scaling(f: Finding) -> str:
    ctx = f["context"]
    label, p0, p1 = _rtt_label(ctx["metric"]), ctx["players_from"], ctx["players_to"]
    if f.get("estimate") is None:
        return (
            f"{_name(ctx)}: {label} growth from {p0} to {p1} players not estimated: {f.get('note')}"
        )
    show = lambda x: fmt(x, 2)  # noqa: E731
    return (
        f"{_name(ctx)}: {label} grows {show(f['estimate'])}x {_bounds(f, show)} "
        f"from {p0} to {p1} players"
    )


@writes("threshold")
def _threshold(f: Finding) -> str:
    ctx = f["context"]
    quantile = _rtt_label(ctx["metric"]).removeprefix("RTT ")
    limit, limit_unit = convert(ctx["threshold_us"], "us")
    show = lambda x: "n/a" if x is None else f"{x:.0f}"  # noqa: E731
    return (
        f"{_name(ctx)}: {quantile} RTT crosses {fmt(limit)} {limit_unit} at "
        f"{show(f['estimate'])} players {_bounds(f, show)}"
    )


@writes("slope")
def _slope(f: Finding) -> str:
    ctx = f["context"]
    unit = f["unit"]
    per_100 = lambda x: fmt(None if x is None else 100 * _shown(x, unit))  # noqa: E731
    shown = convert(f["estimate"], unit)[1].removesuffix("/player")
    note = f"; {f['note']}" if f.get("note") else ""
    return (
        f"{_name(ctx)}: {_rtt_label(ctx['metric'])} changes by {per_100(f['estimate'])} {shown} "
        f"per 100 players {_bounds(f, per_100)} (OLS over {f['n_runs']} runs, HC3){note}"
    )


# How the report names the compared metrics (stats.comparisons.COMPARED_METRICS) and which word
# says that b's value is lower or higher: lower is better for every one of them.
_COMPARED: dict[str, tuple[str, str, str]] = {
    "rtt_net_p50_us": ("RTT p50", "faster", "slower"),
    "rtt_net_p99_us": ("RTT p99", "faster", "slower"),
    "server_cpu_cores": ("server CPU", "cheaper", "costlier"),
    "server_cpu_us_per_msg": ("server CPU per message", "cheaper", "costlier"),
    "server_instr_per_msg": ("server instructions per message", "cheaper", "costlier"),
}


def metric_label(metric: str) -> str:
    """A compared metric's name in words (RTT p50, server CPU, ...)."""
    return _COMPARED.get(metric, (_rtt_label(metric), "", ""))[0]


def verdict_words(f: Finding, with_p: bool = True) -> str:
    """A comparison's verdict in words, naming the side it is about: "kcp slower",
    "tcp cheaper", "undecided (BH-adjusted p 0.15)", "no difference shown", "not compared"."""
    ctx = f["context"]
    _, lower, higher = _COMPARED.get(ctx["metric"], ("", "lower", "higher"))
    match f.get("verdict"):
        case "lower":
            return f"{ctx['b']} {lower}"
        case "higher":
            return f"{ctx['b']} {higher}"
        case "not_compared":
            return "not compared"
        case "undecided" if with_p:
            return f"undecided (BH-adjusted p {fmt(f.get('p_adjusted'), 2)})"
        case "undecided":
            return "undecided"
        case _:
            return "no difference shown"


def _ratio(x: float | None) -> str:
    """A ratio with two decimals below 10 (1.00, 0.96: a ratio of 1 is not shown as "1"),
    three significant digits above."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:.2f}" if abs(x) < 10 else fmt(x, 3)


def ratio_text(estimate: float | None, interval: Any) -> str:
    """'3.04x [2.61, 3.40]', 'n/a' without an estimate."""
    if estimate is None:
        return "n/a"
    low, high = interval or (None, None)
    bounds = "" if low is None and high is None else f" [{_ratio(low)}, {_ratio(high)}]"
    return f"{_ratio(estimate)}x{bounds}"


def value_text(value: float | None, interval: Any, unit: str) -> str:
    """'0.104 ms [0.0858, 0.108]': a stored value and its interval in the shown unit."""
    shown, unit_shown = convert(value, unit)
    low, high = interval or (None, None)
    bounds = (
        ""
        if low is None and high is None
        else f" [{fmt(_shown(low, unit))}, {fmt(_shown(high, unit))}]"
    )
    return f"{fmt(shown)} {unit_shown}{bounds}"


def context_words(ctx: Mapping[str, Any]) -> str:
    """'20 players, active, lan' (with the workload's parameters where it has any)."""
    label = params_label(ctx.get("params"))
    where = f" ({label})" if label else ""
    return f"{players_text(ctx['players'])}, {ctx['workload']}{where}, {ctx['network_profile']}"


def rtt_source_words(source: str) -> str:
    """A run's rtt_source (stats/runs_table.py) in words."""
    if source.startswith("probe:"):
        return (
            f"the uniform network probe's round trip (kind net, {source.removeprefix('probe:')} "
            "Hz per player, echoed in the server's receive path), the same definition for "
            "every library"
        )
    return {
        "stream": "the stream's own payloads, echoed in the server's receive path (kind net; "
        "the periodic probes are replaced by the stream)",
        "pingpong": "pingpong probes, one at a time, echoed in the server's receive path "
        "(kind net)",
        "none": "no RTT: the periodic probes were off and the workload echoes nothing",
    }.get(source, source)


def players_text(n: Any) -> str:
    return f"{n} player" if str(n) == "1" else f"{n} players"


def _suspect_text(s: Mapping[str, Any], unit: str) -> str:
    if s["why"] == "stalled":
        return f"{s['run']} (stalled: {s.get('reason')}; left out)"
    if s["why"] == "far":
        factor = s["value"] / s["cell_median"] if s["cell_median"] else None
        return (
            f"{s['run']} ({value_text(s['value'], None, unit)}, {fmt(factor, 2)}x its cell's "
            f"median {value_text(s['cell_median'], None, unit)}: far from its siblings, kept)"
        )
    steal = f", steal {fmt(s.get('steal_cores'), 2)} cores" if s.get("steal_cores") else ""
    return (
        f"{s['run']} (beside a busy neighbour: others {fmt(s.get('others_cores'), 2)} "
        f"cores{steal}; left out)"
    )


def suspects_text(f: Finding) -> str:
    """The suspect runs a comparison names and its result with them treated the other way;
    "" without suspects."""
    named = f.get("suspects") or []
    if not named:
        return ""
    unit = f.get("metric_unit") or "us"
    alt = f.get("without_suspects") or {}
    each = "; ".join(_suspect_text(s, unit) for s in named)
    other = ratio_text(alt.get("estimate"), alt.get("interval"))
    return f"suspect runs: {each}. With those choices reversed: {other}"


_ORDER_WORDS = {
    True: "keeps order",
    False: "does not keep order",
    None: "does not declare whether it keeps order",
}


def order_text(f: Finding) -> str:
    """Where the two sides' reliable channels differ in order (the stats stage's
    reliable_order), what that means for their round trips; "" otherwise."""
    order = f.get("reliable_order")
    if not order:
        return ""
    ctx = f["context"]
    return (
        f"the round trips ride the reliable channel, and {ctx['a']}'s "
        f"{_ORDER_WORDS[order.get('a')]} while {ctx['b']}'s {_ORDER_WORDS[order.get('b')]} "
        "(manifests' reliable_ordered): under loss only an ordered channel holds later messages "
        "behind a lost one (head-of-line blocking), so the two deliver different services"
    )


@writes("comparison")
def _comparison(f: Finding) -> str:
    ctx = f["context"]
    label, unit = metric_label(ctx["metric"]), f.get("metric_unit") or "us"
    where = context_words(ctx)
    if f.get("verdict") == "not_compared":
        return f"{ctx['b']} against {ctx['a']}, {label} at {where}: not compared ({f.get('note')})"
    medians = (
        f"{ctx['b']} {value_text(f.get('b_median'), f.get('b_interval'), unit)} against "
        f"{ctx['a']} {value_text(f.get('a_median'), f.get('a_interval'), unit)}"
    )
    delta = f.get("cliffs_delta")
    tests = (
        f"Cliff's delta {'n/a' if delta is None else f'{delta:.2f}'}, BH-adjusted p "
        f"{fmt(f.get('p_adjusted'))}"
    )
    head = (
        f"{ctx['b']} {label} is {ratio_text(f['estimate'], f.get('interval'))} that of {ctx['a']} "
        f"at {where}: {verdict_words(f, with_p=False)} ({medians}; {tests})"
    )
    extra = "; ".join(t for t in (suspects_text(f), order_text(f)) if t)
    return f"{head}; {extra}" if extra else head


@writes("inconclusive")
def _inconclusive(f: Finding) -> str:
    ctx = f["context"]
    if ctx["about"] == "comparisons":
        return (
            f"no transport comparison is significant after Benjamini-Hochberg ({ctx['tests']} "
            f"tests); with {ctx['runs_per_cell']} runs per cell the smallest possible two-sided "
            f"Mann-Whitney p is {fmt(f['estimate'], 2)}"
        )
    if ctx["about"] == "interval":
        return f"{f['estimate']} cells have no interval for {_rtt_label(ctx['metric'])}: " + (
            "; ".join(ctx["notes"])
        )
    raise ValueError(f"inconclusive finding: context.about {ctx['about']!r} has no sentence")


@writes("warmup")
def _warmup(f: Finding) -> str:
    ctx = f["context"]
    return (
        f"{ctx['cell_id']}/{ctx['run_id']}: the MSER-5 warm-up cut lands in the second half of "
        "the window (the run did not settle)"
    )


@writes("failed")
def _failed(f: Finding) -> str:
    return (
        f"{f['estimate']} of {f['context']['runs_planned']} planned runs are not in the "
        "statistics (failed or not run)"
    )


@writes("interference")
def _interference(f: Finding) -> str:
    ctx = f["context"]
    each = ", ".join(
        f"{run} ({fmt(others, 2)} cores" + (f", steal {fmt(steal, 2)}" if steal else "") + ")"
        for run, others, steal in zip(
            ctx["runs"], ctx["others_cores"], ctx["steal_cores"], strict=True
        )
    )
    return (
        f"{f['estimate']} of {ctx['runs_ok']} ok runs were measured beside a busy neighbour "
        f"(other processes above {fmt(ctx['threshold_others_cores'])} cores or steal above "
        f"{fmt(ctx['threshold_steal_cores'])} cores on average over the window): left out of "
        f"{f.get('left_out_of', 'comparisons')}, kept in the cell tables: {each}"
    )


def _stall_parts(tick: float | None, quiet: float | None, bound: float) -> str:
    parts = []
    if tick is not None and tick > bound:
        parts.append(f"no server tick for {fmt(tick, 3)} s")
    if quiet is not None and quiet > bound:
        parts.append(f"no probe answered for {fmt(quiet, 3)} s")
    return "; ".join(parts)


@writes("stalled")
def _stalled(f: Finding) -> str:
    ctx = f["context"]
    each = ", ".join(
        f"{run} ({_stall_parts(tick, quiet, ctx['bound_s'])})"
        for run, tick, quiet in zip(
            ctx["runs"], ctx["tick_gap_max_s"], ctx["probe_silence_max_s"], strict=True
        )
    )
    return (
        f"{f['estimate']} of {ctx['runs_ok']} ok runs stalled inside their window (the server's "
        f"ticks or every player's answered probes stopped for more than {fmt(ctx['bound_s'])} s): "
        f"left out of {f.get('left_out_of', 'comparisons')}, kept in the cell tables: {each}"
    )


# Sections of the campaign report's findings, in order: (heading, kinds).
SECTIONS = (
    ("Scaling with players", ("scaling", "threshold", "slope")),
    ("Transports compared (Benjamini-Hochberg over all tests)", ("comparison",)),
    ("Runs that did not settle", ("warmup",)),
    ("What cannot be concluded", ("inconclusive", "failed", "interference", "stalled")),
)


def markdown(findings: list[Finding]) -> str:
    """The findings as Markdown: a bold heading per section of SECTIONS (kinds not in any
    section under "Other"), one bullet per sentence; "- none" without findings."""
    placed = {k for _, ks in SECTIONS for k in ks}
    others = tuple(
        dict.fromkeys(str(f.get("kind")) for f in findings if f.get("kind") not in placed)
    )
    out: list[str] = []
    for heading, ks in (*SECTIONS, ("Other", others)):
        chosen = [f for f in findings if f.get("kind") in ks]
        if chosen:
            out += [f"**{heading}**", "", *(f"- {sentence(f)}" for f in chosen), ""]
    return "\n".join(out) if out else "- none\n"


# -- the Net-Celerity re-analysis (stats/reanalysis) ---------------------------------------------
# Fixed decimals, as the re-analysis report has always printed them; the intervals of these
# findings are within-run or HC3 over single runs, and their sentences say which.


def fixed(value: float | None, digits: int = 2) -> str:
    """value with `digits` decimals; "n/a" for none."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.{digits}f}"


def _fixed_bounds(f: Finding, digits: int) -> str:
    low, high = f.get("interval") or (None, None)
    return f"[{fixed(_shown(low, f['unit']), digits)}, {fixed(_shown(high, f['unit']), digits)}]"


def _per_player(unit: str) -> str:
    """'ms/player' -> 'ms per player'."""
    return SHOWN[unit][0].replace("/", " per ")


def _level_pct(f: Finding) -> str:
    return f"{100 * float(f.get('level', 0.95)):.0f}"


def _config(ctx: Mapping[str, Any]) -> str:
    return f"{ctx['label']} ({ctx['workload_label']})"


def _percent(fraction: float | None, digits: int) -> str:
    return fixed(None if fraction is None else 100 * fraction, digits)


@writes("reanalysed_data")
def _reanalysed_data(f: Finding) -> str:
    repeats = int(f["runs_per_configuration_max"])
    once = (
        "every configuration ran once, so no statement below has a between-run interval"
        if repeats == 1
        else f"configurations ran up to {repeats} times"
    )
    return (
        f"The committed data hold {fixed(f['estimate'], 0)} runs ({f['runs_with_rtt']} with RTT "
        f"results, {f['runs_with_system_log']} with a server system log), {f['rtt_samples']} RTT "
        f"samples and {f['bad_rows']} bad rows; {once}."
    )


@writes("rtt_slope")
def _rtt_slope(f: Finding) -> str:
    return (
        f"{_config(f['context'])}: the run median RTT grows by "
        f"{fixed(_shown(f['estimate'], f['unit']), 3)} {_per_player(f['unit'])}, "
        f"{_level_pct(f)} % HC3 interval {_fixed_bounds(f, 3)} "
        f"(OLS over {f['n_runs']} single runs, R² {fixed(f.get('r2'), 2)})."
    )


# What a resource slope is about and its decimals: metric -> (words, decimals).
_RESOURCE_SLOPES = {
    "server_cpu_cores": ("Server CPU", 4),
    "server_rss_peak_mib": ("Peak server RSS", 2),
}


@writes("resource_slopes")
def _resource_slopes(f: Finding) -> str:
    """A group of resource_slope findings (one metric and workload, one per prototype)."""
    members = f["members"]
    what, digits = _RESOURCE_SLOPES.get(f["context"]["metric"], (f["context"]["metric"], 3))
    parts = [
        f"{m['context']['label']} {fixed(_shown(m['estimate'], m['unit']), digits)} "
        f"{_fixed_bounds(m, digits)}"
        for m in members
    ]
    return (
        f"{what} per added player ({f['context']['workload_label']}; "
        f"{_per_player(members[0]['unit'])}, {_level_pct(members[0])} % HC3 interval over "
        "single runs): " + "; ".join(parts) + "."
    )


@writes("rtt_crossing")
def _rtt_crossing(f: Finding) -> str:
    ctx = f["context"]
    between = "" if f.get("between_run_interval") else ", no between-run interval"
    return (
        f"{_config(ctx)}: the run median RTT reaches {fixed(ctx['threshold_ms'], 0)} ms at about "
        f"{fixed(f['estimate'], 1)} players (interpolated between single runs; "
        f"{f['interval_kind']} {_level_pct(f)} % interval {_fixed_bounds(f, 1)}{between})."
    )


@writes("thresholds_not_reached")
def _thresholds_not_reached(f: Finding) -> str:
    """A group of threshold_not_reached findings: per configuration, its thresholds."""
    by_config: dict[str, list[float]] = {}
    for m in f["members"]:
        by_config.setdefault(_config(m["context"]), []).append(m["context"]["threshold_ms"])
    largest = max(int(m["largest_players"] or 0) for m in f["members"])
    parts = [
        f"{config} " + " and ".join(fixed(x, 0) for x in sorted(ts)) + " ms"
        for config, ts in by_config.items()
    ]
    return (
        f"Thresholds the run median RTT does not reach up to {largest} players: "
        + "; ".join(parts)
        + "."
    )


@writes("pooled_vs_fixed")
def _pooled_vs_fixed(f: Finding) -> str:
    low, high = f["range_ms"]
    top = f["largest"]
    return (
        "Pooling all rows, ramp-up included (their method for RTT), moves the run median by "
        f"{fixed(low)} to {fixed(high)} ms against the fixed {fixed(f['context']['window_s'], 0)} "
        f"s window (median {fixed(f['estimate'])} ms over {f['n_runs']} runs); the largest change "
        f"is {_config(top)} at {top['players']} players: {fixed(top['rtt_p50_pooled_ms'])} ms "
        f"pooled against {fixed(top['rtt_p50_fixed_ms'])} ms in the window. In "
        f"{f['runs_outside_interval']} of {f['n_runs']} runs the pooled median lies outside the "
        f"within-run {100 * f['interval_level']:.0f} % interval of the window median."
    )


@writes("mser_cut")
def _mser_cut(f: Finding) -> str:
    low, high = f["range_s"]
    d_low, d_high = f["mser_minus_fixed_range_ms"]
    return (
        f"MSER-5 on per-second medians cuts between {fixed(low, 1)} and {fixed(high, 1)} s "
        f"relative to the start of their fixed window (median {fixed(f['estimate'], 1)} s); in "
        f"{f['runs_not_settled']} of {f['n_runs']} runs its minimum lies in the second half (the "
        "run did not settle). The MSER-5 window medians differ from the fixed-window ones by "
        f"{fixed(d_low)} to {fixed(d_high)} ms."
    )


@writes("last_join")
def _last_join(f: Finding) -> str:
    late = int(f["estimate"])
    if late == 0:
        return (
            f"In all {f['n_runs']} runs the last player to join logged its first RTT row before "
            f"the fixed window started (latest at {fixed(f['latest_t_s'])} s)."
        )
    return (
        f"In {late} of {f['n_runs']} runs the first RTT row of the last player to join "
        "(reconstructed time) comes after the start of the fixed window (latest at "
        f"{fixed(f['latest_t_s'])} s): their fixed cut does not wait until all players are "
        "connected."
    )


@writes("frame_floor")
def _frame_floor(f: Finding) -> str:
    ctx = f["context"]
    mins = f["rtt_min_ms"]
    min_text = (
        f"is {fixed(mins[0])} ms"
        if len(mins) == 1
        else f"ranges from {fixed(mins[0])} to {fixed(mins[-1])} ms"
    )
    low, high = f["on_frame_fraction_range"]
    mostly = int(f["runs_mostly_on_frames"])
    counts = ", ".join(str(p) for p in f["players_mostly_on_frames"])
    return (
        f"The minimum RTT of every {str(ctx['prototype']).capitalize()} run {min_text}, one "
        f"{1000 / ctx['frame_ms']:.0f} FPS frame ({fixed(ctx['frame_ms'], 3)} ms), even in runs "
        f"whose 5th percentile is as high as {fixed(f['rtt_p5_max_ms'])} ms. Per run, "
        f"{_percent(low, 1)} to {_percent(high, 1)} % of the samples lie within "
        f"{fixed(ctx['tolerance_ms'])} ms of a whole number of frames, against "
        f"{_percent(f['expected_fraction_unquantised'], 2)} % for values not tied to frames; "
        f"more than half do in {mostly} of {f['n_runs']} runs"
        + (f" (at {counts} players)." if mostly else ".")
    )


@writes("nic_rates")
def _nic_rates(f: Finding) -> str:
    """A group of nic_rate findings (one direction, the largest player count)."""
    members = f["members"]
    first = members[0]
    unit = SHOWN[first["unit"]][0]
    parts = [
        f"{_config(m['context'])} {fixed(_shown(m['estimate'], m['unit']))} {_fixed_bounds(m, 2)}"
        for m in members
    ]
    return (
        f"{str(f['context']['direction']).capitalize()} rate of the server node at "
        f"{f['context']['players']} players ({unit}, {first['statistic']} with "
        f"{first['interval_kind']} {_level_pct(first)} % interval; "
        f"{first['context']['counter']} {first['context']['nic']} counters, so any other traffic "
        "of the node is included): " + "; ".join(parts) + "."
    )


# -- the nightly history (stats/history/) -------------------------------------------------------
# Three significant digits in exponent notation where needed, as the history report prints them.


def _g3(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


@writes("night_verdict")
def _night_verdict(f: Finding) -> str:
    ctx = f["context"]
    low, high = f.get("interval") or (None, None)
    return (
        f"{ctx['cell_id']}: {f['verdict']} from {ctx['baseline']} to {ctx['candidate']}: "
        f"{ctx['metric']} ratio {_g3(f['estimate'])} [{_g3(low)}, {_g3(high)}] (BH-adjusted p "
        f"{_g3(f['p_adjusted'])}, {f['n_baseline']} and {f['n_candidate']} runs)"
    )


@writes("verdict_counts")
def _verdict_counts(f: Finding) -> str:
    ctx = f["context"]
    summary = ", ".join(f"{n} {v}" for v, n in sorted(f["cells_by_verdict"].items()))
    return (
        f"{ctx['baseline']} to {ctx['candidate']}: {summary} over {fixed(f['estimate'], 0)} cells "
        f"(a change counts when it exceeds {100 * f['min_effect']:.0f} %, its interval excludes 1 "
        f"and the BH-adjusted Mann-Whitney p is at most {f['max_pvalue']:.2f})"
    )


@writes("change_point")
def _change_point(f: Finding) -> str:
    ctx = f["context"]
    ratio = f["estimate"]
    change = "" if ratio is None else f" ({_g3(ratio)}x the night before)"
    return f"{ctx['cell_id']}: change point at {ctx['night']}{change}"


@writes("too_few_nights")
def _too_few_nights(f: Finding) -> str:
    return f"change points need at least {f['min_nights']} nights; {fixed(f['estimate'], 0)} given"
