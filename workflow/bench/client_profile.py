"""Where a client's CPU goes (bench prototypes): one extra, shorter cell per transport with Go's
CPU profiler on the client process (NETSTICK_CPUPROFILE), its samples sorted into named shares.

The profiled cell is not one of the measured cells (the profiler costs a little), and it runs on
plain loopback without the harness, pinned as the bench pins (server CPU 0, client CPU 1). Each
sample is given to the first bucket its stack matches, reading from the innermost frame out:

    kernel_send      a system call made to send (write, sendto, sendmsg, sendmmsg)
    kernel_receive   a system call made to receive or to wait for a message (read, recv*, epoll)
    kernel_sleep     a system call that sleeps or wakes a thread (nanosleep, futex)
    go_scheduler     the Go scheduler finding and switching goroutines
    go_gc_alloc      allocation and garbage collection
    library_c        a C library through cgo (ENet), its own system calls included
    library          Go code of a third-party module (the transport's library)
    prototype        the reference prototype's own Go code (players, probes, logs, framing)
    other            the rest of Go's runtime and standard library

The shares are of the CPU the profiler sampled (SIGPROF in the thread that runs): kernel work
done for the client outside its threads' own time, such as the network stack's softirq and the
context switches, is partly missed, so the sampled total is below what getrusage counts. In an A/B
of the udp client at 200 players the sampled CPU fell by 17-25 % while getrusage's fell by 3.5 %:
read the shares as where the process spends the time it is seen to run, not as a budget.

Needs the go command (for `go tool pprof`); without it the profile is skipped with a note.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prototypes.contract.processes import pick_free_port
from workflow.bench.record import markdown_table
from workflow.files import REPO
from workflow.harness.prototype_record import go_tool

BUCKETS = (
    "kernel_send", "kernel_receive", "kernel_sleep", "go_scheduler", "go_gc_alloc",
    "library_c", "library", "prototype", "other",
)  # fmt: skip
PROFILE_DURATION_S = 6.0
READY_TIMEOUT_S = 10.0

_SYSCALL = re.compile(
    r"^(internal/runtime/syscall|syscall\.|golang\.org/x/sys/unix\.|runtime\.(futex|usleep|"
    r"nanosleep|epollwait|netpollBreak|write1|read|osyield))"
)
_SEND = re.compile(r"(?i)(write|send)")
_RECEIVE = re.compile(r"(?i)(read|recv|epoll|netpoll|wait)")
_SLEEP = re.compile(r"(?i)(sleep|futex|osyield|notesleep|semasleep|semawakeup|wakep)")
_SCHEDULER = re.compile(
    r"^runtime\.(schedule|findRunnable|park_m|mcall|goexit0|stealWork|gopark|goready|ready|"
    r"execute|exitsyscall|entersyscall|casgstatus)"
)
_GC = re.compile(
    r"^runtime\.(mallocgc|gcBgMarkWorker|gcDrain|gcAssist|markroot|scanobject|bgsweep|"
    r"bgscavenge|memclrNoHeapPointers|growslice|newobject|makeslice)"
)


def classify(frames: Sequence[str]) -> str:
    """The bucket of one sample; frames[0] is the innermost frame."""
    if not frames:
        return "other"
    if frames[0].startswith("runtime.cgocall") or any("._Cfunc_" in f for f in frames[:3]):
        return "library_c"
    if _SYSCALL.match(frames[0]) or frames[0].startswith("runtime.futex"):
        for f in frames:  # the nearest caller that says what the call was for
            name = f.rsplit("/", 1)[-1]
            if _SLEEP.search(name):
                return "kernel_sleep"
            if _SEND.search(name):
                return "kernel_send"
            if _RECEIVE.search(name):
                return "kernel_receive"
        return "other"
    for f in frames:
        if _GC.match(f):
            return "go_gc_alloc"
        if _SCHEDULER.match(f):
            return "go_scheduler"
        if f.startswith("netstick/"):
            return "prototype"
        if "/" in f and "." in f.split("/", 1)[0]:  # a module: github.com/..., golang.org/x/...
            return "library"
    return "other"


def parse_traces(text: str) -> list[tuple[float, list[str]]]:
    """`go tool pprof -traces` output as (seconds, frames innermost first) per stack."""
    samples: list[tuple[float, list[str]]] = []
    for block in text.split("-----------+")[1:]:
        lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
        if not lines:
            continue
        head = lines[0].split()
        if len(head) < 2:
            continue
        frames = [head[1], *(ln.split()[0] for ln in lines[1:])]
        samples.append((_seconds(head[0]), frames))
    return samples


def _seconds(value: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
    match = re.fullmatch(r"([0-9.]+)([a-zµ]+)", value)
    if not match or match.group(2) not in units:
        raise ValueError(f"pprof traces: a sample value {value!r} is not a duration")
    return float(match.group(1)) * units[match.group(2)]


def shares(samples: Sequence[tuple[float, list[str]]]) -> dict[str, Any]:
    """Each bucket's share of the sampled CPU, and the hottest leaf functions."""
    by_bucket: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    for seconds, frames in samples:
        by_bucket[classify(frames)] += seconds
        by_leaf[frames[0]] += seconds
    total = sum(by_bucket.values())
    return {
        "sampled_cpu_s": round(total, 3),
        "shares": {b: round(by_bucket[b] / total, 3) if total else 0.0 for b in BUCKETS},
        "top_leaf_functions": [
            {"function": f, "share": round(s / total, 3)} for f, s in by_leaf.most_common(5)
        ],
    }


def profile(
    binary: Path, transport: str, players: int, params: dict[str, Any], *, pin: bool,
    duration_s: float = PROFILE_DURATION_S,
) -> dict[str, Any]:  # fmt: skip
    """Run one profiled cell and return its shares, or {"skipped": why}."""
    go = go_tool(REPO)
    if go is None:
        return {"skipped": "no go command for `go tool pprof`"}
    with tempfile.TemporaryDirectory(prefix="netstick-profile-") as tmp:
        work = Path(tmp)
        prof = work / "client.pprof"
        error = _run_cell(binary, transport, players, params, pin, duration_s, work, prof)
        if error:
            return {"skipped": error}
        done = subprocess.run(
            [go, "tool", "pprof", "-traces", str(binary), str(prof)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return {"skipped": f"go tool pprof: {done.stderr.strip()[-300:]}"}
    return {
        **shares(parse_traces(done.stdout)),
        "players": players,
        "duration_s": duration_s,
        "network": "loopback, no harness",
        "pinning": {"server": [0], "clients": [1]} if pin else None,
    }


def _run_cell(
    binary: Path, transport: str, players: int, params: dict[str, Any], pin: bool,
    duration_s: float, work: Path, prof: Path,
) -> str | None:  # fmt: skip
    """Server and one client, the client profiled; an error message, or None."""
    port = str(pick_free_port("127.0.0.1"))
    pairs = (("-param", f"{k}={v}") for k, v in params.items())
    workload = ["-workload", "stream", *(a for pair in pairs for a in pair)]
    common = [str(binary), "-transport", transport, "-port", port, *workload]
    (work / "server").mkdir()
    (work / "client").mkdir()
    server = subprocess.Popen(
        [*common, "-role", "server", "-log-dir", str(work / "server")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=_pinned(0) if pin else None,
    )  # fmt: skip
    try:
        if not _ready(server):
            return f"the {transport} server printed no READY line within {READY_TIMEOUT_S:g} s"
        client = subprocess.run(
            [*common, "-role", "client", "-players", str(players), "-duration", str(duration_s),
             "-log-dir", str(work / "client")],
            env={**os.environ, "NETSTICK_CPUPROFILE": str(prof)}, capture_output=True, text=True,
            timeout=duration_s + 120, check=False, preexec_fn=_pinned(1) if pin else None,
        )  # fmt: skip
        if client.returncode != 0 or not prof.is_file():
            why = client.stderr.strip()[-300:]
            return f"the profiled {transport} client exited {client.returncode}: {why}"
        return None
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _ready(server: subprocess.Popen[str]) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_S
    assert server.stdout is not None
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([server.stdout], [], [], left)[0]:
            return False
        line = server.stdout.readline()
        if not line:
            return False
        if line.startswith("NETSTICK READY"):
            return True
    return False


def _pinned(cpu: int) -> Any:
    def pin() -> None:
        if cpu in os.sched_getaffinity(0):
            os.sched_setaffinity(0, {cpu})

    return pin


def profiles_text(profiles: dict[str, Any]) -> str:
    """One line per transport: the largest shares of its client's sampled CPU."""
    if "skipped" in profiles:
        return f"client profiles: {profiles['skipped']}"
    lines = ["where each client's CPU goes (a profiled cell; shares of its sampled CPU):"]
    for t, prof in profiles.items():
        if "skipped" in prof:
            lines.append(f"  {t:<7} skipped: {prof['skipped']}")
            continue
        top = sorted(prof["shares"].items(), key=lambda kv: -kv[1])[:4]
        lines.append(f"  {t:<7} " + ", ".join(f"{b} {v:.0%}" for b, v in top if v > 0))
    return "\n".join(lines)


def profiles_markdown(profiles: dict[str, Any]) -> str:
    """The shares as a Markdown table, one row per transport (bench show, the README)."""
    if "skipped" in profiles:
        return f"client profiles: {profiles['skipped']}"
    header = ["transport", "sampled CPU s", *BUCKETS]
    rows = []
    for t, prof in profiles.items():
        if "skipped" in prof:
            rows.append([t, "skipped", *([""] * len(BUCKETS))])
            continue
        shares_pct = [f"{prof['shares'][b]:.0%}" for b in BUCKETS]
        rows.append([t, f"{prof['sampled_cpu_s']:.2f}", *shares_pct])
    return markdown_table(header, rows, [False, *([True] * (len(header) - 1))])
