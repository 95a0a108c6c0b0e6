"""`netstick campaign status` tells a run in flight (a live process holds its lock, or writes
its work directory) from a stale one (its writer gone, no record), and shows the cause of the
attempt before a running retry. (A real failing run shown where users look:
e2e/run/test_failed_run_shown.py.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import progress
from workflow.cli.main import main
from workflow.files import write_json
from workflow.harness import benchlock

from support import workflow_runner as wr
from support.raw_campaign import RawCampaign


def _plan_with_a_run(tmp_path: Path) -> tuple[campaigns.Plan, Path, Path]:
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "inflight", manifest, repetitions=1)
    plan = campaigns.plan(str(camp))
    raw = tmp_path / "raw"
    [run] = plan.runs
    return plan, raw, layout.run_dir(plan.name, run.cell_id, run.run_id, raw)


def _work_dir(out: Path, pid: int) -> Path:
    """A run in flight as the harness lays it out: .<run-id>.tmp-<pid>/ with its logs."""
    work = out.parent / f".{out.name}{layout.WORK_MARK}{pid}"
    (work / "logs").mkdir(parents=True)
    (work / "server.stderr.log").write_text("")
    return work


def test_status_shows_a_run_whose_lock_is_held_as_running(tmp_path: Path) -> None:
    plan, raw, out = _plan_with_a_run(tmp_path)
    key = plan.runs[0].key
    with benchlock.held(benchlock.run_lock_path(out), f"run {key}", 1.0, announce=False):
        _work_dir(out, os.getpid())  # this process started before the directory was made
        doc = progress.status(plan, raw)
    assert doc["runs"]["running"] == 1 and doc["runs"]["not_run"] == 0
    [f] = doc["in_flight"]
    assert (f["state"], f["pid"], f["attempt"]) == ("running", os.getpid(), 1)
    assert f["host"] == socket.gethostname() and f["elapsed_s"] >= 0
    assert f"  RUNNING {key}: attempt 1, pid {os.getpid()} on {f['host']}, for " in (
        progress.format_status(doc)
    )
    # Its holder gone (the kernel released the lock), the run is stale: no record, a work
    # directory left behind.
    doc = progress.status(plan, raw)
    assert doc["runs"]["stale"] == 1 and doc["runs"]["running"] == 0


def test_without_a_lock_file_a_live_writer_of_the_work_directory_is_running(
    tmp_path: Path,
) -> None:
    plan, raw, out = _plan_with_a_run(tmp_path)
    _work_dir(out, os.getpid())
    doc = progress.status(plan, raw)
    [f] = doc["in_flight"]
    assert (f["state"], f["pid"]) == ("running", os.getpid())


def test_status_shows_a_run_whose_writer_died_without_a_record_as_stale(tmp_path: Path) -> None:
    plan, raw, out = _plan_with_a_run(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(dead.stdout)
    _work_dir(out, pid)
    doc = progress.status(plan, raw)
    assert doc["runs"]["stale"] == 1 and doc["runs"]["running"] == 0
    [f] = doc["in_flight"]
    assert (f["state"], f["pid"]) == ("stale", pid)
    assert f"  STALE {plan.runs[0].key}: attempt 1, pid {pid} is gone" in (
        progress.format_status(doc)
    )
    # Once the run has its record, a leftover directory is no longer the run's state.
    write_json(layout.record_of(out), {"status": "ok"})
    doc = progress.status(plan, raw)
    assert doc["runs"]["ok"] == 1 and doc["in_flight"] == []


def test_a_live_pid_started_after_the_directory_was_last_written_is_not_its_writer(
    tmp_path: Path,
) -> None:
    plan, raw, out = _plan_with_a_run(tmp_path)
    work = _work_dir(out, os.getpid())
    hour_ago = time.time() - 3600  # written before this process started: another, dead writer
    os.utime(work, (hour_ago, hour_ago))
    doc = progress.status(plan, raw)
    assert doc["runs"]["stale"] == 1


def test_a_running_retry_shows_the_cause_of_the_attempt_before(tmp_path: Path) -> None:
    plan, raw, out = _plan_with_a_run(tmp_path)
    status = {
        "status": "failed", "reason": "server_exit", "exit_codes": {"server": 3},
        "detail": "server exited with code 3 before READY; stderr:\nfake: cannot bind",
    }  # fmt: skip
    kept = {"status.json": status, "server.stderr.log": "starting\nfake: cannot bind\n\n"}
    # The first attempt failed and was kept; the retry runs: no record yet.
    RawCampaign(raw, plan.name).failed(plan.runs[0].cell, None, {"20240101T000000-1": kept})
    _work_dir(out, os.getpid())
    doc = progress.status(plan, raw)
    [f] = doc["in_flight"]
    assert (f["state"], f["attempt"]) == ("running", 2)
    [e] = doc["earlier_failures"]
    assert (e["state"], e["exit_code"], e["stderr"]) == (
        "running", 3, ["starting", "fake: cannot bind"],
    )  # fmt: skip
    text = progress.format_status(doc)
    assert (
        f"  ATTEMPT FAILED {plan.runs[0].key}: server_exit, exit code 3, 1 attempt: "
        "fake: cannot bind"
    ) in text.splitlines()
    assert "      starting" in text.splitlines()


def test_status_without_failures_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "fresh", manifest, repetitions=1)
    assert main(["campaign", "status", str(camp), "--data-dir", str(tmp_path / "data")]) == 0
    assert "0 failed, 0 running, 0 stale, 1 not run" in capsys.readouterr().out
