"""Network namespaces, the primitives a sandbox is built from: run `ip` and friends with a time
limit and errors that name the missing package, list and find namespaces, kill every process
inside some, and delete them. The sandbox (sandbox.py) composes them per run."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "nsk-"
NETNS_DIR = Path("/run/netns")  # where `ip netns` keeps its namespaces
CMD_TIMEOUT_S = 10.0
# Debian packages of the tools a sandbox runs (named in errors so the fix is one apt-get away).
REQUIRED_TOOLS = {"ip": "iproute2", "ethtool": "ethtool", "sysctl": "procps"}


class SandboxError(RuntimeError):
    """A sandbox could not be created, used or completely removed."""


def run(
    argv: Sequence[str], *, timeout_s: float = CMD_TIMEOUT_S, check: bool = True
) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except FileNotFoundError as exc:
        raise SandboxError(f"`{argv[0]}` not found: {package_hint(argv[0])}") from exc
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"`{' '.join(argv)}` did not finish within {timeout_s} s") from exc
    if check and result.returncode != 0:
        raise SandboxError(
            f"`{' '.join(argv)}` failed (exit {result.returncode}): "
            f"{(result.stderr or result.stdout).strip()}"
        )
    return result


def ip(ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``ip -n NS ARGS...``: an ip command applied inside a namespace."""
    return run(["ip", "-n", ns, *args])


def package_hint(tool: str) -> str:
    pkg = REQUIRED_TOOLS.get(tool)
    return f"install Debian package {pkg!r} (apt-get install {pkg})" if pkg else "not on PATH"


def missing_tools() -> list[str]:
    return [
        f"{tool} (Debian package {pkg})"
        for tool, pkg in REQUIRED_TOOLS.items()
        if shutil.which(tool) is None
    ]


# -- namespaces, links and processes, by name ---------------------------------------------


def list_netns() -> list[str]:
    """Names of all named network namespaces (``ip netns list``)."""
    out = run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def host_links() -> list[str]:
    """Names of the links in the host (our own) network namespace."""
    out = run(["ip", "-o", "link", "show"]).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(": ", 2)
        if len(parts) >= 2:
            names.append(parts[1].split("@")[0])
    return names


def leftovers(prefix: str = PREFIX) -> list[str]:
    """Every namespace and host link whose name starts with prefix: ``["netns X", "link Y"]``.

    Empty when no sandbox is open and none was left behind.
    """
    found = [f"netns {n}" for n in list_netns() if n.startswith(prefix)]
    found += [f"link {n}" for n in host_links() if n.startswith(prefix)]
    return found


def netns_pids(ns: str) -> list[int]:
    """Pids of the live processes inside a namespace (zombies are not listed)."""
    result = run(["ip", "netns", "pids", ns], check=False)
    if result.returncode != 0:
        return []  # the namespace does not exist (any more)
    return [int(tok) for tok in result.stdout.split() if tok.isdigit()]


def signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_netns_processes(namespaces: Sequence[str], grace_s: float) -> list[str]:
    """SIGTERM every process in the namespaces, SIGKILL the rest after grace_s.

    Returns what survived both (``"pid P in NS"``), normally nothing. Bounded: at most
    grace_s + 2 s.
    """

    def alive() -> dict[int, str]:
        return {pid: ns for ns in namespaces for pid in netns_pids(ns)}

    pids = alive()
    if not pids:
        return []
    log.info("stopping %d process(es) left in %s", len(pids), ", ".join(namespaces))
    signal_all(list(pids), signal.SIGTERM)
    for sig, wait_s in ((signal.SIGKILL, grace_s), (None, 2.0)):
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.02)
            pids = alive()
        if not pids:
            return []
        if sig is not None:
            log.warning("SIGKILL to %s (ignored SIGTERM for %.1f s)", sorted(pids), grace_s)
            signal_all(list(pids), sig)
    return [f"pid {pid} in {ns}" for pid, ns in sorted(pids.items())]


def wait_in_netns(proc: subprocess.Popen[Any], ns: str, timeout_s: float = 5.0) -> None:
    """Wait until a process started with ``ip netns exec NS`` has entered NS (or has exited)."""
    want = os.stat(NETNS_DIR / ns).st_ino
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{proc.pid}/ns/net").st_ino == want:
                return
        if time.monotonic() > deadline:
            raise SandboxError(f"pid {proc.pid} did not enter namespace {ns} in {timeout_s} s")
        time.sleep(0.001)


def delete(ns: str) -> None:
    if ns in list_netns():
        run(["ip", "netns", "del", ns])


# -- owner files: which live process a namespace belongs to ---------------------------------
