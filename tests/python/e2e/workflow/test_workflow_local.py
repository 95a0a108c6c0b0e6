"""The workflow on this machine, end to end with real processes: Snakemake runs every run of a
small campaign through the harness in the seeded order, retries failed runs and keeps their
failures, survives a hard kill, and ends with a table, a page and a summary."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from workflow import layout
from workflow.bench import scratch
from workflow.campaign import expand as campaigns
from workflow.harness import netns

from support import leftovers
from support import report_checks as rc
from support import workflow_runner as wr
from support.marks import needs_snakemake
from support.paths import NETSTICK, REPO

pytestmark = needs_snakemake


def _records(raw: Path) -> list[dict]:
    return list(scratch.records(raw).values())


def test_campaign_runs_in_seeded_order_and_ends_with_table_page_summary(tmp_path: Path) -> None:
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "wf-basic", manifest, workloads=("idle", "stream"))
    res = scratch.run(tmp_path, camp)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    raw = tmp_path / "data" / "raw" / "wf-basic"
    recs = _records(raw)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)

    # Executed in the plan's seeded order (one benchmark at a time locally).
    plan = json.loads((raw / "plan.json").read_text())
    planned = [r["key"] for r in plan["runs"]]
    executed = [
        f"{r['cell_id']}/{r['run_id']}" for r in sorted(recs, key=lambda r: r["start_unix_ns"])
    ]
    assert executed == planned
    assert plan["seed"] == 5 and plan["runs_total"] == 4

    with (tmp_path / "data" / "results" / "wf-basic" / "runs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}
    assert all(float(r["rtt_net_p50_us"]) > 0 for r in rows)
    page = (tmp_path / "report" / "wf-basic" / "index.html").read_text()
    for cell_id in {r["cell_id"] for r in recs}:
        assert cell_id in {r["cell_id"] for r in rows}
    assert "4 ok, 0 failed" in page

    # The statistics stage ran on the same runs.
    results = tmp_path / "data" / "results" / "wf-basic"
    ingested = json.loads((results / "ingest.json").read_text())
    assert ingested["runs_ok"] == 4 and ingested["samples"] > 0 and ingested["bad_rows"] == {}
    findings = json.loads((results / "findings.json").read_text())
    assert findings["runs"] == 4 and findings["cells"] == 2
    assert any(f["kind"] == "inconclusive" for f in findings["findings"])  # 2 runs per cell
    assert "Findings" in page
    # The report is one self-contained HTML file with every figure its manifest expects, a PDF
    # beside it, and an RO-Crate describing both and the tables.
    assert rc.external_references(page) == []
    assert rc.missing_figures(page, results) == []
    manifest = json.loads((results / "figures" / "manifest.json").read_text())
    expected = [f["id"] for f in manifest["figures"] if f["expected"]]
    assert len(rc.figures(page)) == len(expected), expected
    assert {"rtt-players", "resources-players", "rates-players"} <= set(expected)
    report_dir = tmp_path / "report" / "wf-basic"
    assert (report_dir / "index.pdf").read_bytes().startswith(b"%PDF")
    crate = json.loads((report_dir / "ro-crate-metadata.json").read_text())
    ids = {e["@id"] for e in crate["@graph"]}
    assert {"index.html", "data/cells.csv", "data/findings.json", "data/artifact.json"} <= ids

    _commands_paste(page)

    summary = json.loads((raw / "summary.json").read_text())
    assert summary["runs"] == {"total": 4, "ok": 4, "failed": 0, "not_run": 0}
    assert "== campaign wf-basic: 4 of 4 runs ok, 0 failed, 0 not run ==" in out
    assert "netstick: campaign wf-basic: 4/4 runs (100%)" in out
    assert "ETA" in out
    assert f"report: {tmp_path / 'report' / 'wf-basic' / 'index.html'}" in out

    # A second start has nothing to do and changes nothing.
    before = scratch.tree_digest(raw)
    again = scratch.run(tmp_path, camp)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
    assert scratch.tree_digest(raw) == before


def _commands_paste(page: str) -> None:
    """Every command of the report's check-list and appendix is code, pasted as written (plain
    ASCII: no en dash for a flag's two hyphens, no stray backticks), and runs: each netstick
    part with --help, each make target as a dry run (make -n) from the repository root; a
    snakemake command's profile exists (a dry run would need the campaign in the repository)."""
    found = rc.commands(page)
    assert any("--profile das6" in c for c in found), found
    assert any(c.startswith(".venv/bin/netstick report") for c in found), found
    for command in found:
        assert command.isascii() and "`" not in command, command
        for part in command.split(" && "):
            argv = shlex.split(part)
            check = None
            if argv[0].endswith("netstick"):
                check = [str(NETSTICK), *argv[1:], "--help"]
            elif argv[0] == "make":
                check = ["make", "-n", "-C", str(REPO), *argv[1:]]
            if check is not None:
                run = subprocess.run(check, capture_output=True, text=True, timeout=60, check=False)
                assert run.returncode == 0, (part, run.stderr)
            elif argv[0].endswith("snakemake") and "--profile" in argv:
                profile = argv[argv.index("--profile") + 1]
                assert (REPO / "profiles" / profile / "config.yaml").is_file(), part


def test_failed_attempt_is_retried_and_kept(tmp_path: Path) -> None:
    manifest = wr.fake_manifest(
        tmp_path / "proto",
        {"FAKE_PROTOTYPE_MODE": "fail-once", "FAKE_PROTOTYPE_STATE_DIR": str(tmp_path / "st")},
    )
    camp = wr.campaign_file(tmp_path, "wf-retry", manifest, repetitions=1)
    res = scratch.run(tmp_path, camp, config=["retries=1"])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    raw = tmp_path / "data" / "raw" / "wf-retry"
    [rec] = _records(raw)
    assert rec["status"] == "ok" and rec["attempt"] == 2
    [failure] = rec["failed_attempts"]
    assert failure["reason"] in {"not_ready", "server_exit"}
    kept = list((raw / rec["cell_id"] / "r1.failed").iterdir())
    assert len(kept) == 1
    status = json.loads((kept[0] / "status.json").read_text())
    assert status["status"] == "failed"
    assert "cannot bind (fail-once)" in (kept[0] / "server.stderr.log").read_text()
    assert "failed attempts kept (1)" in out


def test_run_failing_every_attempt_is_reported_and_report_still_built(tmp_path: Path) -> None:
    manifest = wr.fake_manifest(tmp_path / "proto", {"FAKE_PROTOTYPE_MODE": "bad-args"})
    camp = wr.campaign_file(tmp_path, "wf-fail", manifest, repetitions=1)
    res = scratch.run(tmp_path, camp, config=["retries=1"])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    raw = tmp_path / "data" / "raw" / "wf-fail"
    [rec] = _records(raw)
    # Exit code 2 (bad arguments) fails again with the same arguments: not retried although an
    # attempt remained.
    assert rec["status"] == "failed" and rec["attempt"] == 1 and rec["attempts_allowed"] == 2
    assert (
        rec["not_retried"]
        == "server: exit code 2 (bad arguments) fails again with the same arguments"
    )
    assert len(rec["failed_attempts"]) == 1
    # The cause is shown where users look: the report's table and the console summary.
    page = (tmp_path / "report" / "wf-fail" / "index.html").read_text()
    table = rc.tables(page)["failed-and-missing-runs"]
    assert table[1] == [
        f"{rec['cell_id']}/r1", "failed", "server_exit", "2", "1",
        "fake: -transport: unknown transport",
    ]  # fmt: skip
    assert "== campaign wf-fail: 0 of 1 runs ok, 1 failed, 0 not run ==" in out
    assert (
        f"FAILED {rec['cell_id']}/r1: server_exit, exit code 2, 1 attempt (not retried): "
        "fake: -transport: unknown transport"
    ) in out

    # reset-failed lets the next start retry it; the old record and attempts stay on disk.
    reset = subprocess.run(
        [str(NETSTICK), "campaign", "reset-failed", str(camp),
         "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert reset.returncode == 0 and "1 failed run(s)" in reset.stdout
    assert not (raw / rec["cell_id"] / "r1.json").exists()
    assert list((raw / rec["cell_id"]).glob("r1.json.reset-*"))

    # The cause mended (the prototype no longer refuses its arguments), the documented resume
    # (start the campaign again) runs it although the report exists, and the report is renewed.
    wr.fake_manifest(tmp_path / "proto")
    report = tmp_path / "report" / "wf-fail" / "index.html"
    before = report.stat().st_mtime_ns
    again = scratch.run(tmp_path, camp, config=["retries=1"])
    out = again.stdout + again.stderr
    assert again.returncode == 0, out[-4000:]
    assert "Nothing to be done" not in out
    [rec] = _records(raw)
    assert rec["status"] == "ok"
    assert report.stat().st_mtime_ns > before
    assert "1 ok, 0 failed, 0 not run" in rc.text(report.read_text())
    assert "== campaign wf-fail: 1 of 1 runs ok, 0 failed, 0 not run ==" in out


def test_hard_killed_campaign_resumes_and_keeps_finished_runs_byte_identical(
    tmp_path: Path,
) -> None:
    sandboxes_before = netns.leftovers()
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "wf-kill", manifest, players=(2, 3), repetitions=3)
    raw = tmp_path / "data" / "raw" / "wf-kill"
    proc = scratch.popen(tmp_path, camp)
    deadline = time.monotonic() + 120
    while len(scratch.records(raw)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert len(scratch.records(raw)) >= 2, "the campaign did not get going"
    os.killpg(proc.pid, signal.SIGKILL)  # everything at once: Snakemake, the job, the harness
    proc.wait(timeout=30)
    time.sleep(0.5)
    finished = wr.ok_run_dirs(raw)
    assert 2 <= len(finished) < 6
    before = {str(d): scratch.tree_digest(d) for d in finished}
    killed = list(raw.glob(f"*/.r*{layout.WORK_MARK}*"))  # the run in flight, if one was

    # After a hard kill Snakemake's lock is stale: unlock once, then start again.
    unlock = scratch.run(tmp_path, camp, "--unlock")
    assert unlock.returncode == 0, unlock.stderr
    res = scratch.run(tmp_path, camp)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    recs = _records(raw)
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    for d, digest in before.items():
        assert scratch.tree_digest(Path(d)) == digest, f"{d} changed on resume"
    plan = campaigns.plan(camp)
    assert {f"{r['cell_id']}/{r['run_id']}" for r in recs} == set(plan.by_key)
    assert leftovers.sandboxes(sandboxes_before) == [], "the killed run left a namespace behind"
    # The killed attempt's work directory is not left lying about: kept among the run's failed
    # attempts (<stamp>-stale), where `campaign status` counts it.
    assert list(raw.glob(f"*/.r*{layout.WORK_MARK}*")) == []
    assert len(list(raw.glob("*/r*.failed/*-stale*"))) >= len(killed)


def test_scheduler_adds_no_thread_per_finished_run(tmp_path: Path) -> None:
    # Snakemake's job-rate limit arms a timer (a thread) at the end of every scheduling round
    # that starts another round: a chain per finished job, each re-solving the job selection
    # every second beside the later runs' windows. Locally the Snakefile lifts the limit
    # (_no_local_rate_limit), so Snakemake's threads stay as many however many runs finished.
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "wf-idle", manifest, repetitions=8)
    raw = tmp_path / "data" / "raw" / "wf-idle"
    runs_csv = tmp_path / "data" / "results" / "wf-idle" / "runs.csv"
    log = tmp_path / "snakemake.log"
    proc = scratch.popen(tmp_path, camp, targets=[runs_csv], log=log)
    threads_by_done: dict[int, int] = {}
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        done = len(scratch.records(raw))
        with contextlib.suppress(OSError):
            n = len(os.listdir(f"/proc/{proc.pid}/task"))
            threads_by_done[done] = max(n, threads_by_done.get(done, 0))
        time.sleep(0.1)
    assert proc.wait(timeout=60) == 0, log.read_text()[-4000:]
    assert len(scratch.records(raw)) == 8
    early = max(n for d, n in threads_by_done.items() if d <= 1)
    late = max(n for d, n in threads_by_done.items() if 6 <= d < 8)
    assert late <= early + 1, threads_by_done


def test_prototype_built_by_its_manifest_then_measured_in_one_start(tmp_path: Path) -> None:
    # The executable is missing; the manifest's build command makes it. One start of the
    # workflow builds it and runs the campaign (not only the build: Snakemake would stop after a
    # job that updates an input marked ancient()).
    manifest = wr.fake_manifest(tmp_path / "proto")
    text = manifest.read_text().replace(
        "executable: fake_prototype.py", "executable: bin/fake_prototype.py"
    )
    manifest.write_text(
        text + "build:\n  command: [sh, -c, 'mkdir -p bin && cp fake_prototype.py bin/']\n"
    )
    camp = wr.campaign_file(tmp_path, "wf-build", manifest, repetitions=1)
    res = scratch.run(tmp_path, camp)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert (manifest.parent / "bin" / "fake_prototype.py").is_file()
    [rec] = _records(tmp_path / "data" / "raw" / "wf-build")
    assert rec["status"] == "ok"
