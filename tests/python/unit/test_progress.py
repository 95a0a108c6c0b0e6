"""The end-of-campaign summary: a resumed campaign's share of time spent measuring counts only
the runs of this session (runs measured earlier took none of its wall time)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import progress
from workflow.files import write_json

from support import workflow_runner as wr
from support.raw_campaign import RawCampaign


def test_resumed_session_counts_only_its_own_windows(tmp_path: Path) -> None:
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "resumed", manifest, workloads=("idle", "stream"))
    plan = campaigns.plan(str(camp))
    raw = tmp_path / "raw"
    session_start_ns = 2_000_000_000_000_000_000
    for k, run in enumerate(plan.runs):
        # the first half ran in an earlier session, the rest in this one
        start = session_start_ns + (1 if k >= len(plan.runs) // 2 else -(10**12))
        doc = {"status": "ok", "window_s": 10.0, "start_unix_ns": start, "overhead_s": 0.5}
        write_json(layout.record_path(plan.name, run.cell_id, run.run_id, raw), doc)
    doc = progress.summarize(plan, raw, since_unix_ns=session_start_ns)
    n = len(plan.runs)
    assert doc["window_ok_s"] == 10.0 * n
    assert doc["window_session_s"] == 10.0 * (n - n // 2)
    line = progress.format_summary(doc, wall_s=100.0).splitlines()[1]
    assert line.startswith(f"wall 1.7 min, measuring {10.0 * (n - n // 2) / 60:.1f} min ")
    assert f"({10.0 * (n - n // 2) / 100:.0%})" in line


def _failed_run(raw: Path, plan: campaigns.Plan, status: dict, stderr: dict[str, str]) -> str:
    """The first planned run failed for good: its record and its kept attempt (status.json and
    the processes' stderr logs)."""
    run = plan.runs[0]
    record = {"status": "failed", "reason": status["reason"], "detail": status["detail"][:60]}
    kept = {"status.json": {"status": "failed", **status}}
    kept |= {f"{name}.stderr.log": text for name, text in stderr.items()}
    RawCampaign(raw, plan.name).failed(
        run.cell, {**record, "attempt": 1}, {"20240101T000000-1": kept}
    )
    return run.key


def _plan(tmp_path: Path) -> campaigns.Plan:
    manifest = wr.fake_manifest(tmp_path / "proto")
    return campaigns.plan(str(wr.campaign_file(tmp_path, "causes", manifest, repetitions=1)))


def test_summary_shows_the_failing_process_last_stderr_lines(tmp_path: Path) -> None:
    plan, raw = _plan(tmp_path), tmp_path / "raw"
    noise = "".join(f"tick {k}\n" for k in range(500))
    key = _failed_run(
        raw,
        plan,
        {
            "reason": "client_exit",
            "exit_codes": {"server": -15, "client-0": 5},
            "detail": "client-0 exited with code 5 (server lost); stderr:\n" + noise,
        },
        {
            # srun's own last words are not the prototype's; the server's stderr is not the
            # failing process's
            "client-0": noise + "dial: reset\n\n  lost server: EOF  \n"
            "srun: error: node3: task 0: Exited with exit code 5\n",
            "server": "server says nothing useful\n",
        },
    )
    [f] = progress.summarize(plan, raw)["failed"]
    assert (f["process"], f["exit_code"], f["attempts"]) == ("client-0", 5, 1)
    assert f["stderr"] == ["tick 499", "dial: reset", "lost server: EOF"]
    lines = progress.format_summary(progress.summarize(plan, raw)).splitlines()
    at = lines.index(f"  FAILED {key}: client_exit, exit code 5, 1 attempt: lost server: EOF")
    assert lines[at + 1 : at + 3] == ["      tick 499", "      dial: reset"]


def test_a_failure_without_stderr_shows_what_the_harness_saw(tmp_path: Path) -> None:
    plan, raw = _plan(tmp_path), tmp_path / "raw"
    detail = "client-0 did not report all its players connected within 10 s: 3 of 8 connected"
    key = _failed_run(raw, plan, {"reason": "players_missing", "detail": detail}, {})
    [f] = progress.summarize(plan, raw)["failed"]
    assert (f["exit_code"], f["stderr"], f["summary"]) == (None, [], detail)
    assert f"  FAILED {key}: players_missing, 1 attempt: {detail}" in (
        progress.format_summary(progress.summarize(plan, raw)).splitlines()
    )


def test_a_harness_error_shows_the_end_of_its_traceback(tmp_path: Path) -> None:
    plan, raw = _plan(tmp_path), tmp_path / "raw"
    trace = "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'port'\n"
    _failed_run(raw, plan, {"reason": "internal_error", "detail": trace}, {})
    [f] = progress.summarize(plan, raw)["failed"]
    assert f["stderr"][-1] == "KeyError: 'port'" and f["exit_code"] is None


def test_a_long_stderr_line_is_cut_on_the_console(tmp_path: Path) -> None:
    plan, raw = _plan(tmp_path), tmp_path / "raw"
    long = "x" * 500
    detail = f"server exited with code 1 during the run; stderr:\n{long}"
    _failed_run(raw, plan, {"reason": "server_exit", "detail": detail}, {"server": long})
    text = progress.format_summary(progress.summarize(plan, raw))
    [line] = [x for x in text.splitlines() if "FAILED" in x]
    assert line.endswith("x...") and len(line.split(": ", 2)[2]) == progress.CAUSE_CHARS


def test_a_killed_process_and_a_failure_not_retried_are_named() -> None:
    doc = {
        "key": "c/r1", "reason": "server_exit", "exit_code": -9, "attempts": 1,
        "not_retried": "server: exit code 2 (bad arguments) fails again with the same arguments",
        "stderr": [], "summary": "server exited with code -9 (killed by SIGKILL) during the run",
    }  # fmt: skip
    assert progress.format_failure(doc) == [
        "  FAILED c/r1: server_exit, exit code -9 (SIGKILL), 1 attempt (not retried): "
        "server exited with code -9 (killed by SIGKILL) during the run"
    ]


def test_a_final_attempt_that_left_no_directory_shows_the_records_cause(tmp_path: Path) -> None:
    plan, raw = _plan(tmp_path), tmp_path / "raw"
    detail = "server exited with code 3 before READY; stderr:\nbind: address in use"
    key = _failed_run(raw, plan, {"reason": "server_exit", "detail": detail}, {"server": "x\n"})
    path = layout.record_path(plan.name, *key.split("/"), raw)
    busy = "run held by another process for more than 1800 s; run did not start"
    write_json(path, {"status": "failed", "reason": "run_busy", "detail": busy, "attempt": 2})
    [f] = progress.summarize(plan, raw)["failed"]
    assert (f["reason"], f["exit_code"], f["attempts"], f["stderr"]) == ("run_busy", None, 2, [])
    assert f["summary"] == busy


def test_monitor_counts_runs_and_rereads_only_a_changed_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The monitor polls every second inside Snakemake, beside the measured runs: a finished
    # record is read once, and again only when a retry replaces it.
    manifest = wr.fake_manifest(tmp_path / "proto")
    plan = campaigns.plan(str(wr.campaign_file(tmp_path, "poll", manifest, repetitions=2)))
    raw = tmp_path / "raw"
    first, second = (layout.record_path(plan.name, r.cell_id, r.run_id, raw) for r in plan.runs)
    reads: list[Path] = []
    read = progress.read_json
    monkeypatch.setattr(progress, "read_json", lambda p: reads.append(p) or read(p))
    monitor = progress.Monitor(plan, raw, out=io.StringIO())
    assert f": 0/{len(plan.runs)} runs (0%)" in monitor.line()

    write_json(first, {"status": "failed"})
    write_json(second, {"status": "ok"})
    assert "2/2 runs (100%), 1 failed," in monitor.line()
    assert "2/2 runs (100%), 1 failed," in monitor.line()
    assert sorted(reads) == sorted([first, second])

    write_json(first, {"status": "ok"})  # the retry succeeded
    line = monitor.line()
    assert "2/2 runs (100%), elapsed" in line and "failed" not in line
    assert reads[2:] == [first]
