"""The server's ticks.csv (CONTRACT.md section 3.4): one row per tick, in order, counters that
agree with each other; and against the clients' rtt.csv, app probes answered by a tick, not
from the receive path, and every echo counted as a message in and out.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from prototypes.contract.checklogs.meta import Meta, lifetime_window
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
from prototypes.contract.checklogs.rtt import Echoes
from prototypes.contract.columns import TICKS_COLUMNS

# An app probe must be answered by a tick (CONTRACT.md section 3.2): some server tick must
# overlap the window from its send to its echo. The slack covers clock reads around the writes;
# it is far below a tick period (16.7 ms at 60 Hz), so an echo from the receive path on one host
# (a window of ~0.1 ms) still misses every tick most of the time.
APP_TICK_SLACK_NS = 1_000_000
# A client is flagged when at least this many of its app probes, and more than this share of
# those checked, overlap no tick: a conformant prototype has none, one that echoes app probes in
# its receive path most (the share varies with each player's phase against the tick grid).
APP_OFF_TICK_MIN = 10
APP_OFF_TICK_SHARE = 0.1

# tick_late_us and tick_duration_us are µs like every _us column: decimals (the reference
# prototype writes three decimals); the counters are integers.
_TICKS_ROW_RE = re.compile(rf"({UINT}),({UINT}),{UDEC},({UDEC})" + rf",({UINT})" * 6)
# Echoes a client received this long before the server's last row were certainly counted in a
# row (the counters are read in the tick, the row's time taken after it).
COUNTED_BEFORE_LAST_ROW_NS = 100_000_000


@dataclass(slots=True)
class Ticks:
    """What the cross-file checks need from server.ticks.csv: every good row's t_unix_ns and
    tick duration in ns, and the application messages counted in and out over all rows."""

    t_unix_ns: npt.NDArray[np.int64]
    duration_ns: npt.NDArray[np.int64]
    msgs_in: int = 0
    msgs_out: int = 0


def check_ticks(path: Path, meta: Meta | None, report: Report) -> Ticks:
    """Row checks of server.ticks.csv, the counters' own rules included; what the cross-file
    checks need (check_app_ticks, check_tick_counts)."""
    name = path.name
    times, durations = array("q"), array("q")
    msgs_in = msgs_out = 0
    lines = data_lines(path, TICKS_COLUMNS, report)
    if lines is None:
        return Ticks(np.empty(0, np.int64), np.empty(0, np.int64))
    window = lifetime_window(meta, path)
    checks: list[FieldCheck] = [
        ("t_unix_ns", UINT_RE, "a positive integer (ns since the Unix epoch)", False),
        ("tick", UINT_RE, "an integer >= 0", False),
        ("tick_late_us", UDEC_RE, "a decimal number >= 0 (microseconds)", False),
        ("tick_duration_us", UDEC_RE, "a decimal number >= 0 (microseconds)", False),
    ] + [(column, UINT_RE, "an integer >= 0", False) for column in TICKS_COLUMNS[4:]]
    prev_tick: tuple[int, int] | None = None  # (tick, line)
    for lineno, line in enumerate(lines, start=2):
        m = _TICKS_ROW_RE.fullmatch(line)
        if m is None:
            fields = line.split(",")
            if len(fields) != len(TICKS_COLUMNS):
                report(name, lineno, wrong_field_count(fields, TICKS_COLUMNS))
                continue
            for p in field_problems(fields, checks):
                report(name, lineno, p)
            t_text, tick_text = fields[0], fields[1]
        else:
            t_text, tick_text, dur_text = m.group(1), m.group(2), m.group(3)
            times.append(int(t_text))
            durations.append(round(float(dur_text) * 1000))
            counters = [int(v) for v in m.groups()[3:]]
            msgs_in += counters[2]
            msgs_out += counters[3]
            _check_counters(name, lineno, counters, report)
        if UINT_RE.fullmatch(t_text) and (problem := window.problem(int(t_text))):
            report(name, lineno, problem)
        if UINT_RE.fullmatch(tick_text):
            tick = int(tick_text)
            if prev_tick is not None and tick <= prev_tick[0]:
                report(
                    name,
                    lineno,
                    f"tick {tick} does not follow tick {prev_tick[0]} of line "
                    f"{prev_tick[1]}: one row per tick, in order",
                )
            prev_tick = (tick, lineno)
    return Ticks(
        np.frombuffer(times, dtype=np.int64),
        np.frombuffer(durations, dtype=np.int64),
        msgs_in,
        msgs_out,
    )


def _check_counters(name: str, lineno: int, counters: list[int], report: Report) -> None:
    """players_connected, networked_objects, msgs_in, msgs_out, bytes_in, bytes_out of one row:
    the players are networked objects, and every message has at least one byte of payload."""
    players, objects, msgs_in, msgs_out, bytes_in, bytes_out = counters
    if objects < players:
        report(
            name,
            lineno,
            f"networked_objects {objects} < players_connected {players}: networked objects "
            "are the players plus the blocks in the world (CONTRACT.md 3.4)",
        )
    for way, msgs, size in (("in", msgs_in, bytes_in), ("out", msgs_out, bytes_out)):
        if size < msgs:
            report(
                name,
                lineno,
                f"bytes_{way} {size} < msgs_{way} {msgs}: every message has a payload of at "
                "least one byte (are the columns swapped?)",
            )


def check_tick_counts(
    ticks: Ticks, metas: dict[str, Meta], echoes: dict[str, Echoes]
) -> str | None:
    """The server counted every message it received and sent (CONTRACT.md 3.4: echoes
    included): each echo a client logged (rtt.csv kinds net and app) was one message in and one
    out of the server. Judged on the echoes received COUNTED_BEFORE_LAST_ROW_NS before the
    server's last row, from clients on the server's host (one clock), when the server exited
    normally; the problem in words, or None."""
    server = metas.get("server")
    if server is None or server.host is None or not server.finished or ticks.t_unix_ns.size == 0:
        return None
    limit = int(ticks.t_unix_ns.max()) - COUNTED_BEFORE_LAST_ROW_NS
    counted = sum(
        int(np.count_nonzero(np.frombuffer(e.echo_unix_ns, dtype=np.int64) <= limit))
        for proc, e in echoes.items()
        if proc in metas and metas[proc].host == server.host
    )
    for way, msgs in (("in", ticks.msgs_in), ("out", ticks.msgs_out)):
        if msgs < counted:
            return (
                f"msgs_{way} adds up to {msgs} over all rows, fewer than the {counted} probe "
                "echoes the clients received before the last row: the server counts every "
                "application message it gets and hands over, its echoes included "
                "(CONTRACT.md 3.4)"
            )
    return None


def check_app_ticks(
    ticks: Ticks,
    metas: dict[str, Meta],
    app_probes: dict[str, Echoes],
    report: Report,
) -> None:
    """app probes are echoed by a server tick (CONTRACT.md 3.2): the window from a probe's send
    (t_unix_ns) to its echo (t_unix_ns + rtt_us) must overlap a tick, which spans its row's
    t_unix_ns -/+ tick_duration_us (either side: a prototype may stamp the row at the tick's
    start or end), plus APP_TICK_SLACK_NS. Only where the server and the client ran on one
    host (meta.json host), so that both read one clock, and only for probes answered within
    the ticks logged (a killed server's last rows may be missing)."""
    server = metas.get("server")
    t, dur = ticks.t_unix_ns, ticks.duration_ns
    if server is None or server.host is None or t.size == 0:
        return
    order = np.argsort(t, kind="stable")
    t, dur = t[order], dur[order]
    # Ticks never overlap, so a window that overlaps one overlaps one of the two ticks around
    # its start or the first two after it.
    for proc, probes in sorted(app_probes.items()):
        meta = metas.get(proc)
        if meta is None or meta.host != server.host or not probes.t_unix_ns:
            continue
        sent = np.frombuffer(probes.t_unix_ns, dtype=np.int64)
        echoed = sent + np.frombuffer(probes.rtt_ns, dtype=np.int64)
        checked = (sent >= t[0] - dur[0]) & (echoed <= t[-1])
        if not checked.any():
            continue
        lo, hi = sent - APP_TICK_SLACK_NS, echoed + APP_TICK_SLACK_NS
        i = np.searchsorted(t, lo)
        on_tick = np.zeros(sent.shape, dtype=bool)
        for k in (-2, -1, 0, 1):
            j = np.clip(i + k, 0, t.size - 1)
            on_tick |= (t[j] - dur[j] <= hi) & (t[j] + dur[j] >= lo)
        off = checked & ~on_tick
        n_off, n_checked = int(np.count_nonzero(off)), int(np.count_nonzero(checked))
        if n_off >= APP_OFF_TICK_MIN and n_off > APP_OFF_TICK_SHARE * n_checked:
            first = int(np.flatnonzero(off)[0])
            line = int(probes.line[first])
            report(
                f"{proc}.rtt.csv",
                line,
                f"{n_off} of {n_checked} app probes were answered between the server's ticks "
                f"(server.ticks.csv), the first here: sent at {int(sent[first])}, echoed "
                f"{(int(echoed[first]) - int(sent[first])) / 1e3:.1f} µs later, with no tick "
                f"within {APP_TICK_SLACK_NS / 1e6:g} ms of that window; app probes are echoed "
                "in the server's next tick, not in its receive path (CONTRACT.md 3.2)",
            )
