"""The server's cost per application message: CPU microseconds and instructions.

A server's CPU in cores moves with how many messages the run happened to carry; its cost per
message does not, so a regression of a library shows in it with less noise. Two measures:

- server_cpu_us_per_msg: the server tree's CPU seconds between the sampler's rows nearest to
  the window's edges (stats.resources.cpu_s_nearest, monitor.csv) over the application
  messages the server counted in that same span (server.ticks.csv msgs_in + msgs_out, CONTRACT
  section 3.4);
- server_instr_per_msg: a callgrind run's instructions (monitors.callgrind, counted from the
  moment counting was switched on to the moment it was switched off, meta.json's
  server_profiler) over the messages counted between the two switches.

Messages are counted over the span the cost was measured over, not the window: the sampler's
0.5 s grid puts its rows nearest to the window's edges up to 0.25 s inside or outside it, and
the callgrind switches land 10-30 ms after the window's edges. What that leaves is in
messages_between and cpu_us_per_msg.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from stats.resources import ResourceSample, cpu_s_nearest
from stats.window import Window

# (t_unix_ns, msgs_in + msgs_out) of one server.ticks.csv row: the messages since the row before.
TickMessages = tuple[int, int]


def tick_messages(rows: Iterable[Mapping[str, str]]) -> list[TickMessages]:
    """(t_unix_ns, msgs_in + msgs_out) of each server.ticks.csv row (read_ticks_csv's dicts);
    ValueError (from int) on a row that is not a number."""
    return [(int(r["t_unix_ns"]), int(r["msgs_in"]) + int(r["msgs_out"])) for r in rows]


def messages_between(ticks: Sequence[TickMessages], start_ns: int, end_ns: int) -> int | None:
    """Application messages of the rows written in (start_ns, end_ns]; None when no row was.

    A row counts the messages since the row before it, so the first row after start_ns brings
    up to one tick period (1/60 s at the default rate) from before the span, and the messages
    after the last row before end_ns are missing: at most one tick's messages at each edge,
    ~0.3 % of a 5 s span at 60 Hz each, and of opposite signs, so they mostly cancel."""
    rows = [n for t, n in ticks if start_ns < t <= end_ns]
    return sum(rows) if rows else None


def cpu_us_per_msg(
    samples: Iterable[ResourceSample],
    ticks: Sequence[TickMessages],
    window: Window,
    proc: str = "server",
) -> float | None:
    """proc's CPU microseconds per application message over the window; None without a
    closed window, two distinct samples near its edges, or a message in their span.

    The span is the sampler's rows nearest to the window's edges, and the messages are
    counted over that same span, so the ratio is of one span. What the 0.5 s sampling grid
    still leaves: (1) the span is not the window: the sampler's first row comes one interval
    after it started, with the clients, so when the players connect sooner than that (20 players
    in ~50 ms) the span starts ~0.45 s into the window, and the server stops soon after the
    window, so the span ends at the last row before (a 5 s window: ~4.5 s of it measured);
    elsewhere the rows nearest the edges lie within 0.25 s of them, inside or out (before the
    window every player is connected and playing, after it the clients leave); (2) /proc's CPU
    times count in clock ticks of 10 ms, so the difference of two readings is off by up to
    10 ms: the larger share of the error when the server uses little CPU (~0.1 s for 20 players
    over 5 s: up to 10 %), which longer windows and more players shrink (~1.3 s for the
    nightly's 100 players over 12 s: under 1 %); (3) one tick's messages at each edge
    (messages_between)."""
    if window.start_unix_ns is None or window.end_unix_ns is None:
        return None
    span = cpu_s_nearest(samples, proc, window.start_unix_ns, window.end_unix_ns)
    if span is None:
        return None
    cpu_s, start_ns, end_ns = span
    msgs = messages_between(ticks, start_ns, end_ns)
    if not msgs:
        return None
    return max(0.0, cpu_s) * 1e6 / msgs


def instr_per_msg(
    instructions: int, ticks: Sequence[TickMessages], profiler: Mapping[str, object]
) -> float | None:
    """Instructions per application message between a callgrind run's switches (meta.json's
    server_profiler on_unix_ns and off_unix_ns); None without both or without a message.

    Each switch takes effect 10-30 ms after its recorded time (monitors.callgrind.Switch), a
    like delay at both edges, so the span of the count and of the messages agree to ~10 ms
    (0.2 % of a 5 s window), plus one tick's messages at each edge (messages_between)."""
    on, off = profiler.get("on_unix_ns"), profiler.get("off_unix_ns")
    if not isinstance(on, int) or not isinstance(off, int) or off <= on:
        return None
    msgs = messages_between(ticks, on, off)
    if not msgs:
        return None
    return instructions / msgs
