"""The bisection's measurers: two executables run interleaved, in pairs of random order, one
sample per run (workflow.nightly.bisect.Measurer).

- CommandMeasurer runs a program with fixed arguments (a bounded workload) and takes the process's
  CPU time (user + system, from the rusage os.wait4 returns) or the last number it prints.
- PrototypeMeasurer runs one cell of a prototype through the harness (workflow.harness.run, as a
  campaign's run is run) with the executable under test, and takes one per-run metric of the
  stats stage (stats.runs_table: rtt_net_p50_us, server_cpu_cores, ...). The harness starts what
  a manifest names, so each executable gets a copy of the prototype's manifest that names it and
  declares the library versions its build info records (the runs' log check compares them with
  what every process reports: a run is of the build it says it is).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.argv import check_cell
from stats import runs_table
from workflow.files import shown_path
from workflow.harness import cell as cells
from workflow.harness.run import run_cell
from workflow.nightly.bisect import CandidateFailed
from workflow.nightly.candidates import build_info

CPU: Final = "cpu"  # CommandMeasurer: CPU seconds of the process
STDOUT: Final = "stdout"  # CommandMeasurer: the last number the program printed
# A run of the prototype that fails is tried once more before its candidate counts as failed: a
# port taken by another process, a slow start on a loaded machine, are not the candidate's fault.
PROTOTYPE_ATTEMPTS: Final = 2


def _pairs(rng: random.Random, a: Path, b: Path, runs: int) -> list[tuple[Path, Path]]:
    """runs pairs (A, B), each in a random order: drift over the measurement hits both alike,
    and neither always runs first (warmer caches, a quieter machine)."""
    out = []
    for _ in range(runs):
        pair = [a, b]
        rng.shuffle(pair)
        out.append((pair[0], pair[1]))
    return out


def interleaved(
    rng: random.Random, a: Path, b: Path, runs: int, run: Callable[[Path], float]
) -> tuple[list[float], list[float]]:
    """runs samples of a and of b, taken in _pairs' order: (samples of a, samples of b)."""
    samples: dict[Path, list[float]] = {a: [], b: []}
    for pair in _pairs(rng, a, b, runs):
        for exe in pair:
            samples[exe].append(run(exe))
    return samples[a], samples[b]


@dataclass
class CommandMeasurer:
    """Runs `executable *args` and takes CPU seconds (sample "cpu") or the last number the
    program prints on stdout (sample "stdout"); a run that exits non-zero, takes longer than
    timeout_s or prints no number raises CandidateFailed naming the executable."""

    args: Sequence[str] = ()
    sample: str = CPU
    seed: int = 0
    timeout_s: float = 300.0
    cwd: Path | None = None
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.sample not in (CPU, STDOUT):
            raise ValueError(f"sample: {self.sample!r}; expected {CPU!r} or {STDOUT!r}")
        self._rng = random.Random(self.seed)

    def measure(self, a: Path, b: Path, runs: int) -> tuple[list[float], list[float]]:
        return interleaved(self._rng, a, b, runs, self.run)

    def run(self, exe: Path) -> float:
        """One run of exe: its sample."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                [str(exe), *self.args], stdout=out, stderr=err, cwd=self.cwd,
                start_new_session=True,
            )  # fmt: skip
            # The whole process group: a program that started children leaves none behind.
            timer = threading.Timer(self.timeout_s, _kill_group, (proc.pid,))
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            except BaseException:  # interrupted: nothing of the run may outlive it
                _kill_group(proc.pid)
                os.waitpid(proc.pid, 0)
                raise
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode(errors="replace")
            stderr = err.read().decode(errors="replace")
        if proc.returncode != 0:
            raise CandidateFailed(
                exe, f"exited with {proc.returncode} (a kill after {self.timeout_s:g} s is -9): "
                f"{stderr.strip()[-1000:]}"
            )  # fmt: skip
        if self.sample == CPU:
            return float(usage.ru_utime + usage.ru_stime)
        return _last_number(exe, stdout)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(pid, signal.SIGKILL)


def _last_number(exe: Path, stdout: str) -> float:
    for word in reversed(stdout.split()):
        try:
            value = float(word)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    raise CandidateFailed(exe, f"printed no number on stdout: {stdout.strip()[-300:]!r}")


@dataclass
class PrototypeMeasurer:
    """One cell of a prototype, run through the harness with each executable.

    cell: a cell document (cell.schema.json) of the prototype whose manifest is `manifest`; its
    prototype and library_version are replaced (the copy of the manifest names the executable),
    the rest (transport, players, workload, duration, network profile, seed) is what both sides
    run alike. Every run's record is kept under work_dir/runs/."""

    manifest: Path
    cell: Mapping[str, Any]
    metric: str
    work_dir: Path
    seed: int = 0
    progress: Callable[[str], None] | None = None
    _rng: random.Random = field(init=False, repr=False)
    _copies: dict[Path, Path] = field(init=False, repr=False, default_factory=dict)
    _count: int = field(init=False, repr=False, default=0)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def measure(self, a: Path, b: Path, runs: int) -> tuple[list[float], list[float]]:
        return interleaved(self._rng, a, b, runs, self.run)

    def run(self, exe: Path) -> float:
        """One run of the cell with exe: the metric of its record."""
        copy = self.manifest_for(exe)
        detail = ""
        for attempt in range(1, PROTOTYPE_ATTEMPTS + 1):
            self._count += 1
            label = f"{self._count:04d}-{exe.parent.name}"
            doc = {k: v for k, v in self.cell.items() if k != "library_version"}
            doc.update(prototype=str(copy), run_id=label, campaign="bisect")
            cell = cells.validate(doc, f"bisection cell {label}")
            outcome = run_cell(cell, self.work_dir / "runs" / label)
            if outcome.interrupted_by is not None:
                raise SystemExit(128 + outcome.interrupted_by)
            if outcome.status == "ok":
                row = runs_table.measure(runs_table.read_run_dir(outcome.path))
                value = row.get(self.metric)
                if isinstance(value, int | float) and math.isfinite(value):
                    if self.progress is not None:
                        self.progress(f"bisect: run {label}: {self.metric} {value}")
                    return float(value)
                detail = f"run {outcome.path}: no finite {self.metric} ({value!r})"
            else:
                detail = f"run {outcome.path} failed ({outcome.reason}): {outcome.detail[-1000:]}"
            if self.progress is not None:
                self.progress(f"bisect: attempt {attempt} of {label}: {detail}")
        raise CandidateFailed(exe, detail)

    def manifest_for(self, exe: Path) -> Path:
        """A copy of the manifest beside exe that names exe, with the library versions exe's
        build info records (checked against the cell before any run)."""
        if exe in self._copies:
            return self._copies[exe]
        doc = yaml.safe_load(self.manifest.read_text(encoding="utf-8"))
        doc["executable"] = str(exe.resolve())
        doc.pop("client_executable", None)
        # The copy runs this one build: the other declared versions are the original's.
        doc.pop("library_builds", None)
        recorded = build_info(exe)
        versions = dict(doc.get("library_versions") or {})
        versions.update({k: recorded[k] for k in versions if k in recorded})
        doc["library_versions"] = versions
        for t in doc.get("transports", []):
            library = str(t.get("library", "")).split(" ", 1)[0]
            if library in recorded:
                t["version"] = recorded[library]
        copy = exe.parent / "prototype.yaml"
        header = (
            f"# Written by netstick bisect: {shown_path(self.manifest)} naming the executable the\n"
            "# bisection built beside this file (not by build.command), with the library versions\n"
            "# its build info records.\n"
        )
        copy.write_text(header + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        man = manifests.load(copy)  # a copy the harness would refuse fails here
        check_cell(man, {**dict(self.cell), "prototype": str(copy), "library_version": "pinned"})
        self._copies[exe] = copy
        return copy
