"""StopSignal: a signal sets it without a lock, and a wait sees it within one slice."""

from __future__ import annotations

import signal
import time

from monitors.stopsignal import SLICE_S, StopSignal


def test_a_signal_during_wait_ends_the_wait_within_a_slice() -> None:
    stop = StopSignal().install([signal.SIGALRM])
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        t0 = time.monotonic()
        assert stop.wait(5.0) is True
        waited_s = time.monotonic() - t0
        assert 0.1 <= waited_s < 0.1 + SLICE_S + 0.2
        assert stop.is_set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def test_wait_without_a_signal_returns_false_after_its_timeout() -> None:
    stop = StopSignal()
    t0 = time.monotonic()
    assert stop.wait(0.05) is False
    assert time.monotonic() - t0 >= 0.05
    stop.set()
    assert stop.wait(10.0) is True  # already set: no sleep at all
