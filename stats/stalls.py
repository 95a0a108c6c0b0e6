"""Runs that stalled inside their measurement window: the server's ticks stopped, or no player's
probe was answered, for longer than STALL_S.

A server stopped for 15 s inside a 25 s window (SIGSTOP in the fault drill) used to give an ok run
with an RTT p50 of 2.5 s and nothing to say why. Two gaps are measured over the window, its edges
included (from the window's start to the first event, and from the last event to its end):

    tick_gap_max_s        the longest time without a row in server.ticks.csv
    probe_silence_max_s   the longest time without an answered net probe of any player (by send
                          time), where the run's RTT comes from periodic probes or a stream; not
                          for pingpong (it stops after its count) nor with probes off

A run is stalled when either exceeds STALL_S: 1 s is 60 ticks at 60 Hz (30 at Envirostick's 30 Hz)
and 10 periods of the 10 Hz probe with every player silent at once; no quiet run of this
project's benches came near it (the largest tick gap of a reference server is a tick or two). A
stalled run keeps its numbers in the cell tables, is left out of the comparisons and is named
with its reason (stats.suspects), as a run beside a busy neighbour is.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from stats.window import NS_PER_S, Window

STALL_S: Final = 1.0
# RTT sources whose answered probes should never fall silent for long (stats.runs_table).
STEADY_SOURCES: Final = ("stream",)


def _largest_gap_s(times_ns: npt.ArrayLike, window: Window) -> float | None:
    """The longest time inside the window without an event, its edges included; None for a
    window of unknown bounds."""
    ws, we = window.start_unix_ns, window.end_unix_ns
    if ws is None or we is None or we <= ws:
        return None
    t = np.asarray(times_ns, dtype=np.int64)
    inside = np.sort(t[(t >= ws) & (t <= we)])
    edges = np.concatenate([[ws], inside, [we]])
    return float(np.diff(edges).max()) / NS_PER_S


def _steady(rtt_source: str | None) -> bool:
    return bool(rtt_source) and (
        str(rtt_source).startswith("probe:") or rtt_source in STEADY_SOURCES
    )


def measure(
    tick_ns: npt.ArrayLike | None,
    net_send_ns: npt.ArrayLike,
    window: Window,
    rtt_source: str | None,
) -> dict[str, Any]:
    """tick_gap_max_s, probe_silence_max_s, stalled and stall_reason of one ok run."""
    ticks = None if tick_ns is None else _largest_gap_s(tick_ns, window)
    silence = _largest_gap_s(net_send_ns, window) if _steady(rtt_source) else None
    reasons = []
    if ticks is not None and ticks > STALL_S:
        reasons.append(f"no server tick for {ticks:.2f} s")
    if silence is not None and silence > STALL_S:
        reasons.append(f"no probe of any player answered for {silence:.2f} s")
    known = ticks is not None or silence is not None
    return {
        "tick_gap_max_s": None if ticks is None else round(ticks, 3),
        "probe_silence_max_s": None if silence is None else round(silence, 3),
        "stalled": bool(reasons) if known else None,
        "stall_reason": (
            "; ".join(reasons) + f" inside the window (bound {STALL_S:g} s)" if reasons else None
        ),
    }
