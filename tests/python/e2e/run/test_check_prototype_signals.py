"""`netstick check-prototype` stopped by SIGTERM or SIGINT stops the prototype processes it
started instead of leaving them running under init."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from support.paths import FAKE_MANIFEST, NETSTICK


def _prototype_processes(work_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if any(str(work_dir) in part for part in cmd) and any("fake_prototype" in p for p in cmd):
            found.append(proc)
    return found


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_check_leaves_no_prototype_process(tmp_path: Path, signum: int) -> None:
    work_dir = tmp_path / "work"
    checker = subprocess.Popen(
        [str(NETSTICK), "check-prototype", str(FAKE_MANIFEST), "--work-dir", str(work_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not _prototype_processes(work_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _prototype_processes(work_dir), "the checker started no prototype process"
        checker.send_signal(signum)
        _out, err = checker.communicate(timeout=30)
        assert checker.returncode == 128 + signum, err
        assert f"stopped by {signal.Signals(signum).name}" in err
        time.sleep(0.2)
        left = _prototype_processes(work_dir)
        assert not left, [p.info["cmdline"] for p in left]
    finally:
        if checker.poll() is None:
            checker.kill()
            checker.wait()
        for proc in _prototype_processes(work_dir):
            proc.kill()
