"""Exact per-interface traffic counters: bytes, packets and drops, each way.

Where the counters come from:

- **Inside a sandbox** (workflow/harness/sandbox.py): the veth counters of the run's own namespace,
  which count every frame of the run and nothing else (the veths carry no other traffic, and with
  offloads off and static neighbours one frame = one packet). ``/proc/<pid>/net/dev`` shows the
  network namespace of ``<pid>``, so any process inside the namespace (the server) gives them
  cheaply from outside; before any process exists, ``ip netns exec NS cat /proc/net/dev`` does.
  (``/sys/class/net`` and psutil show the *caller's* namespace, so they cannot be used from
  outside.) The bytes are Ethernet frame bytes without FCS: a UDP datagram of P payload bytes is P +
  8 + 20 + 14 bytes.
- **Without a sandbox** (no root): every NIC of the host from ``/proc/net/dev``, which also
  carries whatever else the machine sends. ``measure_baseline`` samples the idle traffic for a
  while before the run; ``subtract_baselines`` removes baseline rate x run duration from the
  run's deltas and flags results that are negative or within the baseline's noise. On loopback
  (``lo``) every packet is counted twice: once as tx and once as rx.

``NetSampler`` streams tidy CSV rows of the cumulative counters of chosen interfaces, one flush
per sample (like monitors/sampler.py), plus a first row at start and a last row at stop, so the
run's totals are last - first:

    t_unix_ns,iface,rx_bytes,rx_packets,rx_dropped,tx_bytes,tx_packets,tx_dropped

An open counter source keeps its namespace alive (the kernel holds it for the open file), so
stop a NetSampler before closing its sandbox.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from types import TracebackType
from typing import TextIO

from monitors.stopsignal import StopSignal

CSV_COLUMNS = (
    "t_unix_ns",
    "iface",
    "rx_bytes",
    "rx_packets",
    "rx_dropped",
    "tx_bytes",
    "tx_packets",
    "tx_dropped",
)
DEFAULT_INTERVAL_S = 0.5
NETNS_DIR = Path("/run/netns")
CMD_TIMEOUT_S = 10.0
# The counters a baseline is kept for (drops and errors are not traffic).
TRAFFIC_FIELDS = ("rx_bytes", "rx_packets", "tx_bytes", "tx_packets")


@dataclass(frozen=True, slots=True)
class Counters:
    """Cumulative counters of one interface (or a difference of two readings)."""

    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_dropped: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_dropped: int

    def __sub__(self, other: Counters) -> Counters:
        return Counters(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def parse_net_dev(text: str) -> dict[str, Counters]:
    """Parse the text of /proc/net/dev into iface -> Counters."""
    out: dict[str, Counters] = {}
    for line in text.splitlines()[2:]:  # two header lines
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        v = [int(x) for x in rest.split()]
        if len(v) < 16:
            raise ValueError(f"/proc/net/dev: expected 16 counters for {name.strip()}: {line!r}")
        # rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs
        # drop fifo colls carrier compressed
        out[name.strip()] = Counters(v[0], v[1], v[2], v[3], v[8], v[9], v[10], v[11])
    return out


def read_counters(pid: int | None = None, netns: str | None = None) -> dict[str, Counters]:
    """Counters of every interface in the namespace of ``pid``, or of the named ``netns``, or
    (neither given) of this process's own namespace."""
    if pid is not None and netns is not None:
        raise ValueError("read_counters: give pid or netns, not both")
    if netns is not None:
        try:
            result = subprocess.run(
                ["ip", "netns", "exec", netns, "cat", "/proc/net/dev"],
                capture_output=True,
                text=True,
                timeout=CMD_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"netns {netns}: cannot read /proc/net/dev: {exc}") from exc
        if result.returncode != 0:
            raise OSError(f"netns {netns}: cannot read /proc/net/dev: {result.stderr.strip()}")
        return parse_net_dev(result.stdout)
    path = f"/proc/{pid}/net/dev" if pid is not None else "/proc/net/dev"
    with open(path, encoding="ascii") as f:
        return parse_net_dev(f.read())


class CounterSource:
    """A /proc net/dev file held open, re-read on every call: cheap (no process per sample) and
    still valid after the process it was opened through has exited.

    ``pid``: that process's namespace. ``netns``: a named namespace (opened once through a
    short-lived helper process inside it). Neither: this process's own namespace.
    """

    def __init__(self, pid: int | None = None, netns: str | None = None) -> None:
        if pid is not None and netns is not None:
            raise ValueError("CounterSource: give pid or netns, not both")
        self.description = f"pid {pid}" if pid is not None else f"netns {netns}" if netns else "own"
        if netns is not None:
            self._fd = _open_in_netns(netns)
        else:
            path = f"/proc/{pid}/net/dev" if pid is not None else "/proc/self/net/dev"
            self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> dict[str, Counters]:
        chunks = []
        os.lseek(self._fd, 0, os.SEEK_SET)  # a seq_file regenerates its text from offset 0
        while chunk := os.read(self._fd, 65536):
            chunks.append(chunk)
        return parse_net_dev(b"".join(chunks).decode("ascii"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> CounterSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_in_netns(netns: str, timeout_s: float = 5.0) -> int:
    """Open /proc/<helper>/net/dev of a helper that sleeps inside the named namespace."""
    want = os.stat(NETNS_DIR / netns).st_ino
    helper = subprocess.Popen(
        ["ip", "netns", "exec", netns, "sleep", str(int(timeout_s) + 1)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            # The helper is in the namespace once its ns/net inode is the namespace's.
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{helper.pid}/ns/net").st_ino == want:
                    return os.open(f"/proc/{helper.pid}/net/dev", os.O_RDONLY | os.O_CLOEXEC)
            if helper.poll() is not None or time.monotonic() > deadline:
                err = helper.stderr.read().decode(errors="replace") if helper.stderr else ""
                raise OSError(f"netns {netns}: cannot enter it to read counters: {err.strip()}")
            time.sleep(0.002)
    finally:
        helper.kill()
        helper.wait()
        if helper.stderr:
            helper.stderr.close()


# -- sampler ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NetSample:
    """One CSV row."""

    t_unix_ns: int
    iface: str
    counters: Counters

    def csv_line(self) -> str:
        c = self.counters
        return (
            f"{self.t_unix_ns},{self.iface},{c.rx_bytes},{c.rx_packets},{c.rx_dropped},"
            f"{c.tx_bytes},{c.tx_packets},{c.tx_dropped}\n"
        )


class NetSampler:
    """Background-thread sampler of interface counters into a CSV (see the module doc).

    ``ifaces``: the interfaces to record (None: all of the namespace's). Counters come from
    the namespace of ``pid`` or ``netns`` (or this process's own). The first row is taken in
    start(), the last in stop(), and rows in between on a fixed grid of ``interval_s``.
    """

    def __init__(
        self,
        out_csv: Path | str | None = None,
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        pid: int | None = None,
        netns: str | None = None,
        ifaces: Sequence[str] | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.out_csv = Path(out_csv) if out_csv is not None else None
        self.interval_s = interval_s
        self.ifaces = list(ifaces) if ifaces is not None else None
        self._pid = pid
        self._netns = netns
        self._source: CounterSource | None = None
        self._file: TextIO | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._samples: list[NetSample] = []
        self._error: BaseException | None = None
        self.missed_deadlines = 0

    def start(self) -> NetSampler:
        if self._thread is not None:
            raise RuntimeError("net sampler already started")
        self._source = CounterSource(self._pid, self._netns)
        try:
            first = self._sample()
            if self.ifaces is not None:
                missing = sorted(set(self.ifaces) - {s.iface for s in first})
                if missing:
                    raise ValueError(
                        f"interface(s) {', '.join(missing)} not found in "
                        f"{self._source.description} (has: "
                        f"{', '.join(sorted(self._source.read()))})"
                    )
            if self.out_csv is not None:
                self.out_csv.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.out_csv.open("w", encoding="utf-8", newline="\n")
                self._file.write(",".join(CSV_COLUMNS) + "\n")
            self._write(first)
        except BaseException:
            self._source.close()
            raise
        self._thread = threading.Thread(target=self._run, name="netstick-netsampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Take the last sample, stop the thread, close the CSV and the counter source."""
        if self._thread is None:
            raise RuntimeError("net sampler was not started")
        self._stop.set()
        self._thread.join()
        try:
            if self._error is None:
                self._write(self._sample())
        except OSError as exc:  # the namespace vanished under us
            self._error = exc
        finally:
            if self._file is not None and not self._file.closed:
                self._file.close()
            if self._source is not None:
                self._source.close()
        if self._error is not None:
            raise RuntimeError(f"net sampler failed: {self._error}") from self._error

    def __enter__(self) -> NetSampler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is not None and not self._stop.is_set():
            self.stop()

    def samples(self, iface: str | None = None) -> list[NetSample]:
        with self._lock:
            return [s for s in self._samples if iface is None or s.iface == iface]

    def delta(self, iface: str) -> Counters:
        """Last minus first sample of an interface: its traffic over the sampled window."""
        rows = self.samples(iface)
        if not rows:
            raise KeyError(f"no samples of interface {iface!r}")
        return rows[-1].counters - rows[0].counters

    def _sample(self) -> list[NetSample]:
        assert self._source is not None
        t_unix_ns = time.time_ns()
        counters = self._source.read()
        names = self.ifaces if self.ifaces is not None else sorted(counters)
        return [NetSample(t_unix_ns, n, counters[n]) for n in names if n in counters]

    def _write(self, rows: list[NetSample]) -> None:
        if self._file is not None:
            self._file.write("".join(r.csv_line() for r in rows))
            self._file.flush()  # one flush per sample: a crash loses at most one interval
        with self._lock:
            self._samples.extend(rows)

    def _run(self) -> None:
        deadline = time.monotonic() + self.interval_s
        try:
            while not self._stop.wait(timeout=max(0.0, deadline - time.monotonic())):
                self._write(self._sample())
                deadline += self.interval_s
                behind_s = time.monotonic() - deadline
                if behind_s > 0:  # overran whole intervals: skip them, stay on the grid
                    skipped = int(behind_s // self.interval_s) + 1
                    self.missed_deadlines += skipped
                    deadline += skipped * self.interval_s
        except BaseException as exc:  # reported by stop()
            self._error = exc


# -- idle baseline (no sandbox) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Baseline:
    """Idle traffic of one interface: mean rates and the spread of per-slice counts."""

    iface: str
    duration_s: float
    slice_s: float
    slices: int
    rx_bytes_per_s: float
    rx_packets_per_s: float
    tx_bytes_per_s: float
    tx_packets_per_s: float
    # Standard deviation of the count in one slice, per field (0 with fewer than 2 slices).
    rx_bytes_sd: float
    rx_packets_sd: float
    tx_bytes_sd: float
    tx_packets_sd: float


def measure_baseline(
    duration_s: float = 5.0,
    slice_s: float = 0.5,
    *,
    ifaces: Iterable[str] | None = None,
    source: CounterSource | None = None,
) -> dict[str, Baseline]:
    """Sample idle traffic for duration_s (in slices of slice_s) per interface.

    Call it right before the run, with nothing of the run started. Bounded: about duration_s.
    """
    if duration_s <= 0 or slice_s <= 0 or slice_s > duration_s:
        raise ValueError(
            f"measure_baseline: expected 0 < slice_s ({slice_s}) <= duration_s ({duration_s})"
        )
    n = max(1, round(duration_s / slice_s))
    own = source is None
    src = source if source is not None else CounterSource()
    try:
        readings = [(time.monotonic(), src.read())]
        deadline = readings[0][0]
        for _ in range(n):
            deadline += slice_s
            time.sleep(max(0.0, deadline - time.monotonic()))
            readings.append((time.monotonic(), src.read()))
    finally:
        if own:
            src.close()
    wanted = set(ifaces) if ifaces is not None else set(readings[0][1])
    wall_s = readings[-1][0] - readings[0][0]
    out = {}
    for iface in sorted(wanted):
        if not all(iface in r for _, r in readings):
            continue  # appeared or vanished during the baseline: no baseline for it
        per_field: dict[str, tuple[float, float]] = {}
        for name in TRAFFIC_FIELDS:
            values = [getattr(r[iface], name) for _, r in readings]
            counts = [b - a for a, b in itertools.pairwise(values)]
            rate = (values[-1] - values[0]) / wall_s if wall_s > 0 else 0.0
            sd = statistics.stdev(counts) if len(counts) >= 2 else 0.0
            per_field[name] = (rate, sd)
        out[iface] = Baseline(
            iface=iface,
            duration_s=wall_s,
            slice_s=wall_s / n,
            slices=n,
            rx_bytes_per_s=per_field["rx_bytes"][0],
            rx_packets_per_s=per_field["rx_packets"][0],
            tx_bytes_per_s=per_field["tx_bytes"][0],
            tx_packets_per_s=per_field["tx_packets"][0],
            rx_bytes_sd=per_field["rx_bytes"][1],
            rx_packets_sd=per_field["rx_packets"][1],
            tx_bytes_sd=per_field["tx_bytes"][1],
            tx_packets_sd=per_field["tx_packets"][1],
        )
    return out


@dataclass(frozen=True, slots=True)
class Corrected:
    """One counter of one interface after subtracting the idle baseline (a tidy row)."""

    iface: str
    field: str  # rx_bytes, rx_packets, tx_bytes or tx_packets
    duration_s: float
    raw: int  # the run's delta
    baseline: float  # baseline rate x duration: the idle traffic expected during the run
    corrected: float  # raw - baseline
    noise: float  # z x the standard deviation of the idle traffic over the run
    negative: bool  # corrected < 0: the baseline over-estimates the idle traffic
    within_noise: bool  # |corrected| <= noise: the run's own traffic is not measurable here


def subtract_baselines(
    deltas: Mapping[str, Counters],
    baselines: Mapping[str, Baseline],
    duration_s: float,
    z: float = 3.0,
) -> list[Corrected]:
    """Subtract baseline rate x duration_s from each interface's run delta.

    The noise combines the idle traffic's own variation over the run (its per-slice variance
    times the number of slices the run spans, as for independent slices) and the error of
    the estimated rate (the same spread over the baseline's slices); ``z`` scales it.
    Interfaces without a baseline are left out.
    """
    rows = []
    for iface in sorted(deltas):
        b = baselines.get(iface)
        if b is None:
            continue
        run_slices = duration_s / b.slice_s if b.slice_s > 0 else 0.0
        for name in TRAFFIC_FIELDS:
            raw = getattr(deltas[iface], name)
            rate = getattr(b, name + "_per_s")
            sd = getattr(b, name + "_sd")
            expected = rate * duration_s
            var = run_slices * sd**2 + (run_slices**2) * sd**2 / max(b.slices, 1)
            noise = z * math.sqrt(var)
            corrected = raw - expected
            rows.append(
                Corrected(
                    iface=iface,
                    field=name,
                    duration_s=duration_s,
                    raw=raw,
                    baseline=expected,
                    corrected=corrected,
                    noise=noise,
                    negative=corrected < 0,
                    within_noise=abs(corrected) <= noise,
                )
            )
    return rows


# -- command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m monitors.netcounters",
        description="Sample interface counters (of a namespace, a process's namespace, or the "
        "host) into a CSV; optionally measure an idle baseline first.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--pid", type=int, help="read the namespace of this process")
    where.add_argument("--netns", help="read this named network namespace")
    parser.add_argument("--iface", action="append", help="interface to record (repeatable)")
    parser.add_argument("--out", required=True, type=Path, help="CSV file to write")
    parser.add_argument("--interval-s", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument("--duration-s", type=float, default=0.0, help="0: until SIGINT/SIGTERM")
    parser.add_argument(
        "--baseline-s", type=float, default=0.0, help="measure idle traffic this long first"
    )
    args = parser.parse_args(argv)

    stop = StopSignal().install()
    report: dict[str, object] = {"out": str(args.out)}
    if args.baseline_s > 0:
        with CounterSource(args.pid, args.netns) as src:
            slice_s = min(0.5, args.baseline_s / 2)
            base = measure_baseline(args.baseline_s, slice_s, ifaces=args.iface, source=src)
        report["baseline"] = {k: asdict(v) for k, v in base.items()}
    sampler = NetSampler(
        args.out, args.interval_s, pid=args.pid, netns=args.netns, ifaces=args.iface
    ).start()
    t0 = time.monotonic()
    while not stop.wait(min(0.2, args.interval_s)):
        if args.duration_s > 0 and time.monotonic() - t0 >= args.duration_s:
            break
    sampler.stop()
    report["missed_deadlines"] = sampler.missed_deadlines
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
