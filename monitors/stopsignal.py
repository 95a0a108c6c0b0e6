"""Stop a process's main loop on SIGINT/SIGTERM without taking a lock inside the signal handler.

Python runs a signal handler in the main thread between two bytecodes, possibly while that thread
holds a lock. ``threading.Event.set()`` takes the Event's condition lock, which the main thread
itself holds for part of every ``Event.wait()``; a SIGTERM landing there deadlocks the process,
which then only dies by the harness's SIGKILL and loses its last rows (the Python documentation
warns against locks in signal handlers). ``StopSignal`` sets a plain attribute instead, and its
``wait`` sleeps in short slices, looking at the attribute between them.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable

# The longest a stop request waits unseen: short against the harness's stop grace (seconds).
SLICE_S = 0.02


class StopSignal:
    """A stop flag that signal handlers may set; ``wait`` has ``threading.Event``'s meaning."""

    def __init__(self) -> None:
        self._set = False

    def install(
        self, signums: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM)
    ) -> StopSignal:
        """Make each of signums set the flag (call from the main thread)."""
        for signum in signums:
            signal.signal(signum, self._handle)
        return self

    def _handle(self, _signum: int, _frame: object) -> None:
        self._set = True

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout_s: float) -> bool:
        """Return True as soon as the flag is set, False once timeout_s has passed without it."""
        end = time.monotonic() + timeout_s
        while not self._set:
            left_s = end - time.monotonic()
            if left_s <= 0:
                return False
            time.sleep(min(SLICE_S, left_s))
        return True
