"""Conformance checker for the logs of prototypes/CONTRACT.md section 3 (schema version 1).

check_log_dir(dir) returns every Violation(file, line, message) it finds, in plain words: file
names, headers (exact columns, in order), each row's types and units, event names and who may
write them, meta.json keys and their form, per-(player, kind) uniqueness of probe sequence
numbers, and what no conformant prototype can log:

- an rtt_us of kind net or app below RTT_FLOOR_US (an RTT written in ms instead of µs);
- app probes answered between the server's ticks (echoed from the receive path), where the
  server and the client ran on one host and so share a clock (CONTRACT.md section 3.2);
- two players joining from one remote address at once (players sharing a socket);
- with a manifest: a library whose version in a process's meta.json differs from the manifest.

One module per log kind holds its rules: meta.py (meta.json), rtt.py, events.py, ticks.py (and
the app-probes-on-ticks check across rtt.csv and ticks.csv); rows.py what the CSV checks share.
This module finds the files and collects the violations.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prototypes.contract.checklogs.events import check_events
from prototypes.contract.checklogs.meta import (
    Meta,
    check_meta,
    report_library_versions,
    report_message_limits,
    report_transport_settings,
)
from prototypes.contract.checklogs.rtt import Echoes, check_rtt
from prototypes.contract.checklogs.ticks import (
    Ticks,
    check_app_ticks,
    check_tick_counts,
    check_ticks,
)
from prototypes.contract.columns import FILES_BY_ROLE, LOG_FILE_RE

if TYPE_CHECKING:
    from prototypes.contract.manifest import Manifest

__all__ = ["Violation", "check_library_versions", "check_log_dir"]

DEFAULT_MAX_PER_FILE = 50


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a log directory breaks the contract. line is 1-based; 0 means the whole file."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


class _Reporter:
    """Collects violations, at most max_per_file per file plus one line saying how many more."""

    def __init__(self, max_per_file: int) -> None:
        self.max_per_file = max_per_file
        self.violations: list[Violation] = []
        self._count: dict[str, int] = defaultdict(int)

    def __call__(self, file: str, line: int, message: str) -> None:
        self._count[file] += 1
        if self._count[file] <= self.max_per_file:
            self.violations.append(Violation(file, line, message))

    def finish(self) -> list[Violation]:
        for file, n in self._count.items():
            if n > self.max_per_file:
                self.violations.append(
                    Violation(
                        file,
                        0,
                        f"{n - self.max_per_file} more violations not shown "
                        f"(first {self.max_per_file} shown)",
                    )
                )
        return sorted(self.violations, key=lambda v: (v.file, v.line))


def check_log_dir(
    log_dir: Path | str,
    max_per_file: int = DEFAULT_MAX_PER_FILE,
    manifest: Manifest | None = None,
) -> list[Violation]:
    """Check a run's log directory against CONTRACT.md section 3; [] means it conforms.

    manifest: the prototype's manifest, to compare the library versions and transport settings
    its processes recorded with those it declares (check_library_versions).
    """
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return [Violation(str(log_dir), 0, "is not a directory")]
    report = _Reporter(max_per_file)
    files_by_proc: dict[str, set[str]] = defaultdict(set)
    for entry in sorted(log_dir.iterdir()):
        if entry.is_dir():
            report(entry.name, 0, "unexpected directory: a log directory holds only log files")
            continue
        m = LOG_FILE_RE.fullmatch(entry.name)
        if m is None:
            report(
                entry.name,
                0,
                "unexpected file name: expected <proc>.meta.json, <proc>.rtt.csv, "
                "<proc>.events.csv or <proc>.ticks.csv with <proc> = server or client-<k>",
            )
            continue
        files_by_proc[m["proc"]].add(m["suffix"])
    if not files_by_proc:
        report(".", 0, "no log files: expected at least server.meta.json")

    metas: dict[str, Meta] = {}
    app_probes: dict[str, Echoes] = {}
    ticks: Ticks | None = None
    for proc, suffixes in sorted(files_by_proc.items()):
        role = "server" if proc == "server" else "client"
        expected = FILES_BY_ROLE[role]
        for suffix in sorted(suffixes - set(expected)):
            report(f"{proc}.{suffix}", 0, f"a {role} process does not write {suffix} files")
        for suffix in expected:
            if suffix not in suffixes:
                report(f"{proc}.{suffix}", 0, f"missing: every {role} process writes this file")
        meta = (
            check_meta(log_dir / f"{proc}.meta.json", proc, role, report)
            if ("meta.json" in suffixes)
            else None
        )
        if meta is not None:
            metas[proc] = meta
        if "rtt.csv" in suffixes and role == "client":
            app_probes[proc] = check_rtt(log_dir / f"{proc}.rtt.csv", meta, report)
        if "events.csv" in suffixes:
            check_events(log_dir / f"{proc}.events.csv", role, meta, report)
        if "ticks.csv" in suffixes and role == "server":
            ticks = check_ticks(log_dir / f"{proc}.ticks.csv", meta, report)
    if ticks is not None:
        check_app_ticks(ticks, metas, app_probes, report)
        if problem := check_tick_counts(ticks, metas, app_probes):
            report("server.ticks.csv", 0, problem)
    if manifest is not None:
        report_library_versions(log_dir, manifest, report)
        report_transport_settings(log_dir, manifest, report)
        report_message_limits(log_dir, manifest, report)
    return report.finish()


def check_library_versions(log_dir: Path | str, manifest: Manifest) -> list[Violation]:
    """The library_versions of each process's meta.json against the manifest's (CONTRACT.md
    3.1; prototype.schema.json): every library a process records has the version the manifest
    declares, and the library of the process's own transport is recorded."""
    found: list[Violation] = []

    def report(file: str, line: int, message: str) -> None:
        found.append(Violation(file, line, message))

    report_library_versions(Path(log_dir), manifest, report)
    return found
