"""This machine and its toolchain: what a benchmark's or a run's numbers were measured on.

collect records where one benchmark's numbers came from (the code's commit, Go, Python, the
kernel, the CPU); the harness records the same of each run with the prototypes it started
(workflow/harness/prototype_record.py), and a campaign's facts those of the checkout that
collects its results (workflow/campaign/facts/).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prototypes.contract.library_builds import go_mod_requirements


def run_tool(
    argv: Sequence[str], cwd: Path | None = None, timeout_s: float = 10, strip: bool = True
) -> str | None:
    """stdout of a command, or None when it is missing, fails or exceeds timeout_s (a version
    or state that cannot be read is recorded as unknown, never a crash)."""
    try:
        out = subprocess.run(
            list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if strip else out.stdout


def git_commit(repo: Path) -> dict[str, Any]:
    """HEAD commit and whether the work tree had uncommitted changes."""
    commit = run_tool(["git", "rev-parse", "HEAD"], repo)
    status = run_tool(["git", "status", "--porcelain"], repo)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def go_version(binary: Path | None = None) -> str | None:
    """The Go toolchain that built binary (from its build info), else the installed `go`."""
    go = shutil.which("go")
    if go is None:
        return None
    if binary is not None and binary.is_file():
        # First line of `go version -m BIN` is "BIN: go1.x.y".
        info = run_tool([go, "version", binary.as_posix()])
        if info:
            return info.split(": ", 1)[-1].splitlines()[0]
    return run_tool([go, "version"])


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def this_machine() -> dict[str, Any]:
    """The machine a night of the history is filed under when its runs recorded none (the
    import follows the campaign, on the same machine)."""
    return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "hostname": platform.node()}


def cpu_governor() -> str | None:
    """The cpufreq governor of CPU 0 (None where the kernel exposes none, e.g. in most VMs)."""
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None


def go_modules(go_mod: Path) -> dict[str, str]:
    """Module -> version of every requirement in a go.mod (what a prototype was built from)."""
    return go_mod_requirements(go_mod)


def collect(repo: Path, binary: Path | None = None) -> dict[str, Any]:
    """Everything a reader needs to know where a result came from."""
    return {
        "git": git_commit(repo),
        "go_version": go_version(binary),
        "python_version": platform.python_version(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "hostname": platform.node(),
        "timestamp_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "netstick_argv": [Path(sys.argv[0]).name, *sys.argv[1:]],
    }
