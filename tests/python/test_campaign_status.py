"""Failed runs show their cause where users look: a real failing run of the fake prototype (its
client exits 4 and says why on stderr) is shown with its reason, exit code, attempts and last
stderr line by the end-of-campaign summary, by `netstick campaign status` (text and JSON) and in
the report's failed-runs table; status tells a run in flight (a live process holds its lock)
from a stale one (its writer gone, no record)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import workflow_runner as wr

from report import figdata
from stats import ingest
from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import progress, records
from workflow.cli.main import main
from workflow.files import write_json
from workflow.harness import benchlock

CLIENT_STDERR = "fake: player 0 could not connect"  # tests/python/fake_prototype.py, client-fail


def _next_second() -> None:
    """The harness names a kept attempt by the second and its pid: two attempts of one process
    need two seconds."""
    time.sleep(1.02 - time.time() % 1.0)


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A campaign of two runs: the first failed both its attempts through the real harness
    (client-fail), the second never ran."""
    root = tmp_path_factory.mktemp("failing")
    manifest = wr.fake_manifest(root / "proto", {"FAKE_PROTOTYPE_MODE": "client-fail"})
    camp = wr.campaign_file(root, "failing", manifest, repetitions=2)
    plan = campaigns.plan(str(camp))
    raw = root / "data" / "raw"
    progress.write_plan(plan, raw)
    first = plan.runs[0]
    code, record = records.execute(first, plan.name, attempt=1, attempts=2, raw=raw)
    assert (code, record) == (1, None)  # a retry remains: no record yet
    _next_second()
    code, record = records.execute(first, plan.name, attempt=2, attempts=2, raw=raw)
    assert code == 0 and record is not None and record["status"] == "failed"
    return {"root": root, "camp": camp, "plan": plan, "raw": raw, "key": first.key}


def test_summary_shows_reason_exit_code_attempts_and_stderr(failed: dict) -> None:
    doc = progress.summarize(failed["plan"], failed["raw"])
    [f] = doc["failed"]
    assert (f["key"], f["reason"], f["process"], f["exit_code"], f["attempts"]) == (
        failed["key"], "client_exit", "client-0", 4, 2,
    )  # fmt: skip
    assert f["stderr"] == [CLIENT_STDERR]
    text = progress.format_summary(doc)
    assert f"  FAILED {failed['key']}: client_exit, exit code 4, 2 attempts: {CLIENT_STDERR}" in (
        text.splitlines()
    )


def test_status_text_lists_cells_and_the_failure_and_exits_1(
    failed: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(failed["root"] / "data")
    assert main(["campaign", "status", str(failed["camp"]), "--data-dir", data]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "campaign failing: 2 runs of 1 cells: 0 ok, 1 failed, 0 running, 0 stale, 1 not run"
    )
    cell = failed["plan"].runs[0].cell_id
    assert out[2].split() == ["0", "1", "1", "0", "0", cell]
    assert f"  FAILED {failed['key']}: client_exit, exit code 4, 2 attempts: {CLIENT_STDERR}" in out


def test_status_json_carries_the_cause(failed: dict, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(failed["root"] / "data")
    assert main(["campaign", "status", str(failed["camp"]), "--data-dir", data, "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"] == {
        "total": 2, "ok": 0, "failed": 1, "not_run": 1, "running": 0, "stale": 0,
    }  # fmt: skip
    [f] = doc["failed"]
    assert (f["reason"], f["exit_code"], f["attempts"], f["stderr"]) == (
        "client_exit", 4, 2, [CLIENT_STDERR],
    )  # fmt: skip
    assert f["summary"].startswith("client-0 exited with code 4 before all its players connected")
    assert doc["in_flight"] == [] and doc["earlier_failures"] == []


def test_report_failed_runs_table_carries_the_cause(failed: dict, tmp_path: Path) -> None:
    results = tmp_path / "results"
    ingest.ingest(failed["raw"] / "failing", results)
    runs = pl.read_parquet(results / "runs.parquet")
    row = runs.filter(pl.col("status") == "failed").row(0, named=True)
    assert (row["exit_code"], row["attempts"], row["failed_process"]) == (4, 2, "client-0")
    assert json.loads(row["stderr_tail"]) == [CLIENT_STDERR]
    table = figdata.failed_table(runs)
    assert table.columns == ["run", "status", "reason", "exit_code", "attempts", "cause"]
    assert table.rows() == [
        (failed["key"], "failed", "client_exit", 4, 2, CLIENT_STDERR),
        (failed["plan"].runs[1].key, "not run", None, None, None, ""),
    ]


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
    kept = layout.failed_dir(out) / "20240101T000000-1"
    kept.mkdir(parents=True)
    write_json(kept / "status.json", {
        "status": "failed", "reason": "server_exit", "exit_codes": {"server": 3},
        "detail": "server exited with code 3 before READY; stderr:\nfake: cannot bind",
    })  # fmt: skip
    (kept / "server.stderr.log").write_text("starting\nfake: cannot bind\n\n")
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
