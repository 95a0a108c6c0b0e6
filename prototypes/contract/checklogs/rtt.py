"""A client's rtt.csv (CONTRACT.md section 3.2): one row per probe echoed, lib rows as read.

Rows are written in echo order, so on unreliable channels seq may legitimately arrive out of
order: only duplicates are violations. Under the pingpong workload its net rows follow that
workload's rules (pingpong.py). What no conformant prototype can log: an rtt_us of kind
net or app below RTT_FLOOR_US (an RTT written in ms instead of µs).
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prototypes.contract.checklogs.meta import Meta, lifetime_window
from prototypes.contract.checklogs.pingpong import Pingpong
from prototypes.contract.checklogs.rows import (
    UDEC,
    UDEC_RE,
    UINT,
    UINT_RE,
    FieldCheck,
    Report,
    data_lines,
    field_problems,
    wrong_field_count,
)
from prototypes.contract.columns import RTT_COLUMNS, RTT_KINDS

# The smallest rtt_us a measured probe (kinds net and app) may have. A round trip crosses the
# kernel's network stack twice and wakes a process on each side; the reference prototype's
# smallest round trips on a 2-core VM were 13.7-17.0 µs on loopback and 11.6-20.4 µs between two
# network namespaces over a veth pair (tcp, udp, enet; 10 players x 200 probes/s x 5 s each), so
# one floor serves both. 5 µs stays below both by half; an RTT written in ms instead of µs is
# 1000x too small and falls below it whenever the real round trip was under 5 ms.
RTT_FLOOR_US = 5.0

# send_late_us is never negative: a send never fires before its schedule (CONTRACT.md 3.2).
_RTT_ROW_RE = re.compile(rf"({UINT}),({UINT}),({UINT}),({UDEC}),(net|app|lib),({UDEC})?")
_KIND_CODE = {k: i for i, k in enumerate(RTT_KINDS)}


@dataclass(slots=True)
class Echoes:
    """What the tick checks need of one rtt.csv: its app rows' send time (ns), round trip (ns)
    and line (ticks.check_app_ticks), and when every net and app echo arrived (ns;
    ticks.check_tick_counts)."""

    t_unix_ns: array[int]
    rtt_ns: array[int]
    line: array[int]
    echo_unix_ns: array[int]


_RTT_FIELD_CHECKS: tuple[FieldCheck, ...] = (
    ("t_unix_ns", UINT_RE, "a positive integer (ns since the Unix epoch)", False),
    ("player", UINT_RE, "an integer >= 0", False),
    ("seq", UINT_RE, "an integer >= 0", False),
    ("rtt_us", UDEC_RE, "a decimal number >= 0 (microseconds)", False),
    ("kind", re.compile("net|app|lib"), "one of net, app, lib", False),
    (
        "send_late_us",
        UDEC_RE,
        "a decimal number >= 0 (microseconds; a send never fires before its schedule) or empty",
        True,
    ),
)


def _below_floor(rtt_text: str) -> bool:
    """rtt_us (a UDEC) < RTT_FLOOR_US, read from the text: most rows are far above it."""
    return (len(rtt_text) == 1 or rtt_text[1] == ".") and float(rtt_text) < RTT_FLOOR_US


def check_rtt(path: Path, meta: Meta | None, report: Report) -> Echoes:
    """Check a client's rtt.csv; what the tick checks need of it."""
    name = path.name
    app = Echoes(array("q"), array("q"), array("q"), array("q"))
    lines = data_lines(path, RTT_COLUMNS, report)
    if lines is None:
        return app
    window = lifetime_window(meta, path)
    lo = window.lo if window.lo is not None else 1
    hi = window.hi if window.hi is not None else 1 << 63
    p_lo = p_hi = None
    if meta is not None and meta.first_player is not None and meta.players is not None:
        p_lo, p_hi = meta.first_player, meta.first_player + meta.players - 1
    # (player, kind, seq, line) of every row, for the duplicate check at the end.
    keys = array("q")
    # kind -> [rows below RTT_FLOOR_US, first such line, its rtt_us]
    too_fast: dict[str, list[Any]] = {}
    match = _RTT_ROW_RE.fullmatch
    pingpong = (
        Pingpong.for_params(name, meta.params, report)
        if meta is not None and meta.workload == "pingpong"
        else None
    )
    for lineno, line in enumerate(lines, start=2):
        m = match(line)
        if m is not None:
            t_text, player_text, seq_text, rtt_text, kind, late = m.groups()
            t = int(t_text)
            if not lo <= t <= hi:
                report(name, lineno, window.problem(t) or f"t_unix_ns {t} is not positive")
        else:
            fields = line.split(",")
            if len(fields) != len(RTT_COLUMNS):
                report(name, lineno, wrong_field_count(fields, RTT_COLUMNS))
                continue
            problems = field_problems(fields, _RTT_FIELD_CHECKS)
            for p in problems:
                report(name, lineno, p)
            t_text, player_text, seq_text, rtt_text, kind, late = fields
            if UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
                report(name, lineno, problem)
            if not (
                UINT_RE.fullmatch(player_text)
                and UINT_RE.fullmatch(seq_text)
                and kind in _KIND_CODE
            ):
                continue
            if not (UINT_RE.fullmatch(t_text) and UDEC_RE.fullmatch(rtt_text)):
                rtt_text = ""  # nothing more to learn from this row's times
        player = int(player_text)
        if p_lo is not None and p_hi is not None and not p_lo <= player <= p_hi:
            report(
                name,
                lineno,
                f"player {player} is not one of this client's players "
                f"{p_lo}..{p_hi} (from -first-player and -players in meta.json)",
            )
        if kind == "lib":
            if late:
                report(name, lineno, f"send_late_us is {late!r} but must be empty for kind lib")
        elif rtt_text:
            if _below_floor(rtt_text):
                entry = too_fast.setdefault(kind, [0, lineno, rtt_text])
                entry[0] += 1
            rtt_ns = round(float(rtt_text) * 1000)
            app.echo_unix_ns.append(int(t_text) + rtt_ns)
            if pingpong is not None and kind == "net":
                pingpong.row(lineno, player, int(seq_text), int(t_text), rtt_ns, late or "")
            if kind == "app":
                app.t_unix_ns.append(int(t_text))
                app.rtt_ns.append(rtt_ns)
                app.line.append(lineno)
        keys.extend((player, _KIND_CODE[kind], int(seq_text), lineno))
    _report_duplicate_seqs(name, keys, report)
    if pingpong is not None:
        pingpong.finish()
    for kind, (count, first_line, value) in too_fast.items():
        report(
            name,
            first_line,
            f"{count} rtt_us value(s) of kind {kind} below RTT_FLOOR_US = {RTT_FLOOR_US:g} µs, "
            f"the first here ({value}): no round trip through the kernel is that fast; "
            "rtt_us is in microseconds (were they written in ms?)",
        )
    return app


def _report_duplicate_seqs(name: str, keys: array[int], report: Report) -> None:
    rows = np.frombuffer(keys, dtype=np.int64).reshape(-1, 4)
    if rows.shape[0] < 2:
        return
    order = np.lexsort((rows[:, 3], rows[:, 2], rows[:, 1], rows[:, 0]))
    s = rows[order]
    same = np.all(s[1:, :3] == s[:-1, :3], axis=1)
    for i in np.flatnonzero(same):
        # s is sorted by line within equal keys, so s[i] is the earlier row of the pair.
        player, kind_code, seq, line = (int(x) for x in s[i + 1])
        first_line = int(s[i, 3])
        report(
            name,
            line,
            f"seq {seq} of player {player} kind {RTT_KINDS[kind_code]} "
            f"repeats line {first_line}: seq is unique per player and kind",
        )
