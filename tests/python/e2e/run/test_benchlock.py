"""benchlock: one measurement per machine and one process per run, across processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflow.harness import benchlock

HOLD = """
import sys, time
from pathlib import Path
from workflow.harness import benchlock
with benchlock.held(Path(sys.argv[1]), "run holder/r1", 60):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(path: Path, hold_s: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(hold_s)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_waits_for_the_holder_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bench.lock"
    holder = _holder(path, 1.0)
    try:
        with benchlock.held(path, "run b/r1", 30) as waited_s:
            assert waited_s >= 0.5  # the holder kept it for 1 s after printing "held"
        err = capsys.readouterr().err
        assert f"run b/r1: waiting for run holder/r1 (pid {holder.pid} on" in err
    finally:
        holder.wait(timeout=10)


def test_waiting_longer_than_allowed_raises_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "bench.lock"
    holder = _holder(path, 30)
    try:
        t0 = time.monotonic()
        with (
            pytest.raises(
                benchlock.LockTimeout, match=rf"held by run holder/r1 \(pid {holder.pid}"
            ),
            benchlock.held(path, "run b/r1", 0.3, announce=False),
        ):
            pass
        assert time.monotonic() - t0 < 5
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_releases_the_lock_at_once(tmp_path: Path) -> None:
    path = tmp_path / "bench.lock"
    holder = _holder(path, 30)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with benchlock.held(path, "run b/r1", 1.0, announce=False) as waited_s:
        assert waited_s < 0.5


def test_the_same_process_may_take_a_lock_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "bench.lock"
    with benchlock.held(path, "outer", 1.0), benchlock.held(path, "inner", 1.0) as waited_s:
        assert waited_s == 0.0
    # Released: another process gets it at once.
    holder = _holder(path, 0.1)
    holder.wait(timeout=10)
