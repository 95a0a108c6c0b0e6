"""Sample CPU, memory and threads of named process trees and of the host, with psutil.

A run names its process roots (``{"server": pid, "client-0": pid}``). Every ``interval_s`` the
sampler sums each root's whole tree (the root and all its descendants, because a prototype may
fork helpers) and the host, and appends tidy rows to a CSV:

    t_unix_ns,proc,cpu_user_s,cpu_system_s,cpu_cores,rss_bytes,num_threads

- ``cpu_user_s``/``cpu_system_s``: cumulative CPU seconds of the tree. A descendant that exits
  keeps the last value seen for it, so the columns never go backwards (its CPU after the last
  sample, at most one interval, is lost).
- ``cpu_cores``: CPU seconds used over the last interval divided by the wall time of that
  interval (1.0 = one core fully busy).
- ``rss_bytes``: sum of the tree's resident set sizes (shared pages count once per process, so
  this is an upper bound for multi-process trees).
- ``proc=host``: all cores together; ``cpu_cores`` is how many cores were busy, ``rss_bytes``
  is memory in use (total minus available), ``num_threads`` is empty.
- ``proc=sampler``: the sampler's own cost: CPU of its sampling thread (so it is exact even
  when the sampler runs inside the harness process); ``rss_bytes``/``num_threads`` are those
  of the hosting process.
- ``proc=steal`` (with ``host``): time the hypervisor gave this machine's virtual CPUs to
  someone else; ``cpu_user_s`` is the cumulative steal seconds of all cores (``cpu_system_s``
  0), ``cpu_cores`` how many cores were stolen over the interval, ``rss_bytes`` 0.

What else used the machine during a run (stats.interference) is derived from these rows: the
host's busy cores minus the named trees and the sampler, and the steal.

The file is flushed once per sample, so a crash loses at most one interval. Samples are taken
on a fixed grid of absolute deadlines (no drift); missed deadlines are skipped and counted.

In a run directory the harness's sampler writes monitor.csv (MONITOR_CSV), and under SLURM each
process sampled on its own node by monitors.wrap writes monitor-<name>.csv (node_csv);
read_monitor() reads them back as one list of samples, the one reader of both.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TextIO

import psutil

from monitors.stopsignal import StopSignal

CSV_COLUMNS = (
    "t_unix_ns",
    "proc",
    "cpu_user_s",
    "cpu_system_s",
    "cpu_cores",
    "rss_bytes",
    "num_threads",
)
HOST = "host"
SAMPLER = "sampler"
STEAL = "steal"
RESERVED = (HOST, SAMPLER, STEAL)  # rows of the sampler's own, never a process's name
DEFAULT_INTERVAL_S = 0.5
MONITOR_CSV = "monitor.csv"  # the harness's sampler, in the run directory
NODE_CSV_PREFIX = "monitor-"  # monitor-<name>.csv: one process sampled on its own node


@dataclass(frozen=True, slots=True)
class Sample:
    """One CSV row: the state of one process tree (or the host) at one instant."""

    t_unix_ns: int
    proc: str
    cpu_user_s: float
    cpu_system_s: float
    cpu_cores: float
    rss_bytes: int
    num_threads: int | None

    def csv_line(self) -> str:
        threads = "" if self.num_threads is None else str(self.num_threads)
        return (
            f"{self.t_unix_ns},{self.proc},{self.cpu_user_s:.6f},{self.cpu_system_s:.6f},"
            f"{self.cpu_cores:.4f},{self.rss_bytes},{threads}\n"
        )

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> Sample:
        """The sample of one CSV row (csv.DictReader's), as csv_line wrote it."""
        return cls(
            int(row["t_unix_ns"]),
            row["proc"],
            float(row["cpu_user_s"]),
            float(row["cpu_system_s"]),
            float(row["cpu_cores"]),
            int(row["rss_bytes"]),
            int(row["num_threads"]) if row["num_threads"] else None,
        )


@dataclass(frozen=True, slots=True)
class SamplerCost:
    """What sampling cost, so a report can show the observer effect."""

    samples: int
    missed_deadlines: int
    wall_s: float
    thread_cpu_s: float  # CPU of the sampling thread over its lifetime: the sampler's own cost
    process_cpu_s: float  # CPU of the hosting process since it started (all of it in the CLI)

    @property
    def cpu_cores(self) -> float:
        return self.thread_cpu_s / self.wall_s if self.wall_s > 0 else 0.0


# A process is identified by (pid, create_time) so a recycled pid is never mistaken for the
# process we saw before.
_ProcKey = tuple[int, float]


class _Tree:
    """Cumulative accounting for one named root and its descendants."""

    def __init__(self, name: str, pid: int) -> None:
        self.name = name
        self.pid = pid
        self.gone = False
        self.root: psutil.Process | None = None
        try:
            self.root = psutil.Process(pid)
        except psutil.NoSuchProcess:
            self.gone = True
        # Last (user, system) seen per member, kept after the member exits so the
        # cumulative sum never drops.
        self.cpu_by_member: dict[_ProcKey, tuple[float, float]] = {}
        self.prev: tuple[float, float] | None = None  # (cpu_s, monotonic s) of the last read

    def read(self) -> tuple[float, float, int, int] | None:
        """Return (user_s, system_s, rss_bytes, num_threads) of the tree, or None if gone."""
        if self.gone or self.root is None:
            return None
        try:
            # An exited root that its parent has not reaped yet is a zombie: it has no more
            # CPU to report, so it counts as gone (its last reading stays in the CSV).
            if self.root.status() == psutil.STATUS_ZOMBIE:
                self.gone = True
                return None
            members = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:  # includes ZombieProcess: the root has exited
            self.gone = True
            return None
        except psutil.AccessDenied:
            members = [self.root]
        rss_bytes = 0
        num_threads = 0
        alive = 0
        for proc in members:
            try:
                with proc.oneshot():
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue  # exited: keeps its last value in cpu_by_member
                    times = proc.cpu_times()
                    mem = proc.memory_info()
                    threads = proc.num_threads()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                # A member that exited between listing and reading (or that we may not
                # read) keeps its last value in cpu_by_member.
                continue
            # children_user/children_system are deliberately left out: reaped children are
            # already counted through cpu_by_member, adding them would count them twice.
            self.cpu_by_member[(proc.pid, proc.create_time())] = (times.user, times.system)
            rss_bytes += mem.rss
            num_threads += threads
            alive += 1
        if alive == 0:
            self.gone = True
            return None
        user_s = sum(u for u, _ in self.cpu_by_member.values())
        system_s = sum(s for _, s in self.cpu_by_member.values())
        return user_s, system_s, rss_bytes, num_threads


def _host_cpu_s() -> tuple[float, float, float]:
    """Cumulative CPU seconds of all cores: busy (user-ish, system-ish) and stolen, from one
    reading of /proc/stat so the two agree."""
    t = psutil.cpu_times()
    user_s = t.user + getattr(t, "nice", 0.0)
    system_s = t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
    return user_s, system_s, getattr(t, "steal", 0.0)  # no steal field: not a VM (or not Linux)


def _rate(cpu_s: float, mono: float, prev: tuple[float, float] | None) -> float:
    """CPU cores used since prev = (cpu_s, monotonic s); 0.0 without a previous reading."""
    if prev is None or mono <= prev[1]:
        return 0.0
    return max(0.0, (cpu_s - prev[0]) / (mono - prev[1]))


class Sampler:
    """Background-thread sampler of named process trees and the host.

    Use as a context manager, or call start() and stop(); stop() returns the SamplerCost.
    """

    def __init__(
        self,
        roots: Mapping[str, int],
        out_csv: Path | str | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        sample_host: bool = True,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        for name in roots:
            if not name or any(c in name for c in ",\n\r") or name in RESERVED:
                raise ValueError(
                    f"process name {name!r} must be non-empty, contain no comma or newline, "
                    f"and not be one of {', '.join(map(repr, RESERVED))}"
                )
        self.interval_s = interval_s
        self.out_csv = Path(out_csv) if out_csv is not None else None
        self.sample_host = sample_host
        self._trees = [_Tree(name, pid) for name, pid in roots.items()]
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: TextIO | None = None
        self._error: BaseException | None = None
        self._cost: SamplerCost | None = None
        self._n_samples = 0
        self._missed = 0
        self._host_prev: tuple[float, float] | None = None  # (busy cpu_s, mono)
        self._steal_prev: tuple[float, float] | None = None  # (steal cpu_s, mono)
        self._self_prev: tuple[float, float] | None = None
        self._self_proc = psutil.Process()
        self._thread_native_id: int | None = None

    # -- public API -------------------------------------------------------------------------

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        if self.out_csv is not None:
            self.out_csv.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.out_csv.open("w", encoding="utf-8", newline="\n")
            self._file.write(",".join(CSV_COLUMNS) + "\n")
            self._file.flush()
        self._thread = threading.Thread(target=self._run, name="netstick-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> SamplerCost:
        """Take a last sample, stop the thread, close the CSV, and return the sampler's cost."""
        if self._thread is None:
            raise RuntimeError("sampler was not started")
        self._stop.set()
        self._thread.join()
        if self._file is not None and not self._file.closed:
            self._file.close()
        if self._error is not None:
            raise RuntimeError(f"sampler failed: {self._error}") from self._error
        assert self._cost is not None
        return self._cost

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is not None and self._cost is None:
            self.stop()

    @property
    def cost(self) -> SamplerCost | None:
        """The cost once stopped, else None."""
        return self._cost

    @property
    def all_roots_gone(self) -> bool:
        return all(t.gone for t in self._trees)

    def samples(self, proc: str | None = None) -> list[Sample]:
        """A copy of the samples taken so far (all of them, or those of one proc)."""
        with self._lock:
            if proc is None:
                return list(self._samples)
            return [s for s in self._samples if s.proc == proc]

    # -- the sampling thread ----------------------------------------------------------------

    def _run(self) -> None:
        self._thread_native_id = threading.get_native_id()
        thread_cpu0 = time.thread_time()
        mono0 = time.monotonic()
        try:
            # A first, unwritten reading sets the baselines so the first row already has a
            # meaningful cpu_cores.
            self._sample_once(write=False)
            last_sample_mono = time.monotonic()
            deadline = mono0 + self.interval_s
            while True:
                stopping = self._stop.wait(timeout=max(0.0, deadline - time.monotonic()))
                if stopping:
                    # A last sample covers the tail of the run, unless the previous one was
                    # so recent that its cpu_cores would be mostly noise.
                    if time.monotonic() - last_sample_mono >= 0.1 * self.interval_s:
                        self._sample_once(write=True)
                    break
                self._sample_once(write=True)
                last_sample_mono = time.monotonic()
                deadline += self.interval_s
                behind_s = last_sample_mono - deadline
                if behind_s > 0:
                    # Overran whole intervals: skip them but stay on the original grid.
                    skipped = int(behind_s // self.interval_s) + 1
                    self._missed += skipped
                    deadline += skipped * self.interval_s
        except BaseException as exc:  # reported by stop(); a thread cannot raise to its caller
            self._error = exc
        finally:
            cpu = self._self_proc.cpu_times()
            self._cost = SamplerCost(
                samples=self._n_samples,
                missed_deadlines=self._missed,
                wall_s=time.monotonic() - mono0,
                thread_cpu_s=time.thread_time() - thread_cpu0,
                process_cpu_s=cpu.user + cpu.system,
            )

    def _own_thread_cpu_s(self) -> tuple[float, float]:
        for th in self._self_proc.threads():
            if th.id == self._thread_native_id:
                return th.user_time, th.system_time
        total = time.thread_time()  # not listed (non-Linux): no user/system split
        return total, 0.0

    def _sample_once(self, write: bool) -> None:
        t_unix_ns = time.time_ns()
        mono = time.monotonic()
        rows: list[Sample] = []
        for tree in self._trees:
            reading = tree.read()
            if reading is None:
                continue
            user_s, system_s, rss_bytes, num_threads = reading
            cpu_s = user_s + system_s
            cores = _rate(cpu_s, mono, tree.prev)
            tree.prev = (cpu_s, mono)
            rows.append(
                Sample(t_unix_ns, tree.name, user_s, system_s, cores, rss_bytes, num_threads)
            )
        if self.sample_host:
            user_s, system_s, steal_s = _host_cpu_s()
            busy_s = user_s + system_s
            cores = _rate(busy_s, mono, self._host_prev)
            self._host_prev = (busy_s, mono)
            vm = psutil.virtual_memory()
            rows.append(
                Sample(t_unix_ns, HOST, user_s, system_s, cores, vm.total - vm.available, None)
            )
            steal_cores = _rate(steal_s, mono, self._steal_prev)
            self._steal_prev = (steal_s, mono)
            rows.append(Sample(t_unix_ns, STEAL, steal_s, 0.0, steal_cores, 0, None))
        user_s, system_s = self._own_thread_cpu_s()
        cores = _rate(user_s + system_s, mono, self._self_prev)
        self._self_prev = (user_s + system_s, mono)
        with self._self_proc.oneshot():
            own_rss = self._self_proc.memory_info().rss
            own_threads = self._self_proc.num_threads()
        rows.append(Sample(t_unix_ns, SAMPLER, user_s, system_s, cores, own_rss, own_threads))
        if not write:
            return
        if self._file is not None:
            self._file.write("".join(r.csv_line() for r in rows))
            self._file.flush()  # one flush per sample: a crash loses at most one interval
        with self._lock:
            self._samples.extend(rows)
        self._n_samples += 1


# -- the CSV files read back ----------------------------------------------------------------


def node_csv(out_dir: Path, name: str) -> Path:
    """Where monitors.wrap samples the process name on its own node."""
    return out_dir / f"{NODE_CSV_PREFIX}{name}.csv"


def read_samples(path: Path) -> list[Sample]:
    """Every row of one sampler CSV; a malformed row raises (ValueError, KeyError, TypeError)."""
    with path.open(newline="") as f:
        return [Sample.from_row(row) for row in csv.DictReader(f)]


def node_row(proc: str, name: str) -> str:
    """The name read_monitor gives a node CSV's own host, steal or sampler rows: proc@name,
    e.g. host@server (the host the process name ran on)."""
    return f"{proc}@{name}"


def read_monitor(run_dir: Path) -> list[Sample]:
    """A run directory's sampler rows: monitor.csv, where under SLURM each process sampled on
    its own node (monitor-<name>.csv) replaces that process's rows (the local monitor.csv then
    sees only the srun launcher). A node CSV's host, steal and sampler rows are another
    machine's, or another sampler's: they come back as node_row(proc, name), never mixed into
    the harness's own."""
    samples = read_samples(run_dir / MONITOR_CSV)
    for path in sorted(run_dir.glob(f"{NODE_CSV_PREFIX}*.csv")):
        name = path.stem.removeprefix(NODE_CSV_PREFIX)
        node = [
            replace(x, proc=node_row(x.proc, name)) if x.proc in RESERVED else x
            for x in read_samples(path)
        ]
        samples = [x for x in samples if x.proc != name] + node
    return samples


# -- command line ---------------------------------------------------------------------------


def _parse_pid(text: str) -> tuple[str, int]:
    name, sep, pid_text = text.partition("=")
    if not sep or not name or not pid_text.isdigit():
        raise argparse.ArgumentTypeError(f"--pid expects NAME=PID, got {text!r}")
    return name, int(pid_text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m monitors.sampler",
        description="Sample CPU, RSS and threads of named process trees and the host into a CSV.",
    )
    parser.add_argument(
        "--pid",
        action="append",
        type=_parse_pid,
        default=[],
        metavar="NAME=PID",
        help="a process root to sample with its tree (repeatable)",
    )
    parser.add_argument("--out", required=True, type=Path, help="CSV file to write")
    parser.add_argument("--interval-s", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument(
        "--duration-s",
        type=float,
        default=0.0,
        help="stop after this long (0: until SIGINT/SIGTERM or every root has exited)",
    )
    parser.add_argument("--no-host", action="store_true", help="do not sample the host")
    args = parser.parse_args(argv)

    roots = dict(args.pid)
    for name, pid in roots.items():
        if not psutil.pid_exists(pid):
            parser.error(f"--pid {name}={pid}: no such process")

    stop = StopSignal().install()

    sampler = Sampler(roots, args.out, args.interval_s, sample_host=not args.no_host).start()
    t0 = time.monotonic()
    while not stop.wait(min(0.2, args.interval_s)):
        if args.duration_s > 0 and time.monotonic() - t0 >= args.duration_s:
            break
        if roots and sampler.all_roots_gone:
            break
    cost = sampler.stop()
    report = asdict(cost) | {"cpu_cores": cost.cpu_cores, "pid": os.getpid(), "out": str(args.out)}
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
