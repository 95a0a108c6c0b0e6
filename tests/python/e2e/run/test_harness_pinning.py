"""CPU pinning on real processes: the spawn helper's affinity, the pinning of a running process,
and what the harness applies, refuses and records in meta.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from prototypes.contract.processes import pin_running, spawn, terminate
from workflow.harness import cell as cells
from workflow.harness import run as harness

from support.marks import needs_netemu, needs_root
from support.paths import FAKE_MANIFEST

ALLOWED = sorted(os.sched_getaffinity(0))
# A strict subset where the machine allows it, so a pinning that did nothing would show.
ONE_CPU = ALLOWED[-1]

# Starts a thread and a child process, then prints the CPUs each of its threads may use.
THREADS = """
import os, subprocess, sys, threading, time
ready = threading.Event()
def worker():
    ready.set()
    time.sleep(30)
threading.Thread(target=worker, daemon=True).start()
ready.wait()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
tasks = sorted(os.listdir(f"/proc/{os.getpid()}/task"))
cpus = " ".join(f"{t}:{sorted(os.sched_getaffinity(int(t)))}" for t in tasks)
print(f"NETSTICK AFFINITY {cpus}", flush=True)
print(f"child {child.pid}", flush=True)
time.sleep(30)
"""


def _task_affinities(pid: int) -> dict[int, set[int]]:
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def test_spawn_pins_the_process_and_every_thread_it_starts(tmp_path: Path) -> None:
    child = spawn("p", [sys.executable, "-c", THREADS], tmp_path, cpus=[ONE_CPU])
    try:
        got = child.watcher.wait_for("NETSTICK AFFINITY", 10)
        assert got is not None
        per_thread = got[1].split()[2:]
        assert len(per_thread) >= 2
        assert all(entry.endswith(f":[{ONE_CPU}]") for entry in per_thread), per_thread
    finally:
        terminate(child, 1.0)
        child.watcher.join()


def test_pin_running_reaches_threads_and_children_started_before(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADS], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        grandchild = int(proc.stdout.readline().split()[1])
        assert pin_running(proc.pid, [ONE_CPU]) == [ONE_CPU]
        for pid in (proc.pid, grandchild):
            assert all(cpus == {ONE_CPU} for cpus in _task_affinities(pid).values()), pid
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def _fake_cell(**kw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "cell_id": "fake-tcp",
        "prototype": str(FAKE_MANIFEST),
        "transport": "tcp",
        "players": 2,
        "workload": "stream",
        "params": {"size": 100, "rate": 20},
        "duration_s": 0.6,
        "sample_interval_s": 0.1,
        "isolation": "none",
        "placement": "local",
        "baseline_s": 0,
    }
    doc.update(kw)
    return cells.validate(doc)


def test_harness_pins_server_and_clients_and_records_the_cpus(tmp_path: Path) -> None:
    cell = _fake_cell(
        cpu_pinning={"server": [ONE_CPU], "clients": [ONE_CPU], "emulator": [ONE_CPU]}
    )
    res = harness.run_cell(cell, tmp_path / "run")
    assert res.status == "ok", res.detail
    meta = json.loads((res.path / "meta.json").read_text())
    # Read back from the kernel; the run had no emulator process to pin.
    assert meta["cpu_pinning"] == {"server": [ONE_CPU], "client-0": [ONE_CPU], "emulator": None}


def test_unpinned_run_records_no_pinning(tmp_path: Path) -> None:
    res = harness.run_cell(_fake_cell(), tmp_path / "run")
    assert res.status == "ok", res.detail
    assert "cpu_pinning" not in json.loads((res.path / "meta.json").read_text())


def test_cpu_outside_the_allowed_set_fails_before_any_process_starts(tmp_path: Path) -> None:
    absent = max(ALLOWED) + 1000
    t0 = time.monotonic()
    res = harness.run_cell(_fake_cell(cpu_pinning={"clients": [absent]}), tmp_path / "run")
    assert res.status == "failed" and res.reason == "pinning_error"
    assert f"cpu_pinning.clients: CPU {absent} not available" in res.detail
    assert not (res.path / "server.stdout.log").exists()
    assert time.monotonic() - t0 < 10


@needs_root
@needs_netemu
def test_harness_pins_the_emulator_of_an_impaired_profile(tmp_path: Path) -> None:
    cell = _fake_cell(
        isolation="netns",
        network_profile="lan-emulated",
        cpu_pinning={"emulator": [ONE_CPU]},
    )
    res = harness.run_cell(cell, tmp_path / "run")
    assert res.status == "ok", res.detail
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["cpu_pinning"] == {"emulator": [ONE_CPU]}
