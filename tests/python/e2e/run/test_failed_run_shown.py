"""Failed runs show their cause where users look: a real failing run of the fake prototype (its
client exits 4 and says why on stderr) is shown with its reason, exit code, attempts and last
stderr line by the end-of-campaign summary, by `netstick campaign status` (text and JSON) and in
the report's failed-runs table."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from report import tables
from stats import ingest
from workflow.campaign import expand as campaigns
from workflow.campaign import progress, records
from workflow.cli.main import main

from support import workflow_runner as wr

CLIENT_STDERR = "fake: player 0 could not connect"  # support/fake_prototype.py, client-fail


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
    table = tables.failed_table(runs)
    assert table.columns == ["run", "status", "reason", "exit_code", "attempts", "cause"]
    assert table.rows() == [
        (failed["key"], "failed", "client_exit", 4, 2, CLIENT_STDERR),
        (failed["plan"].runs[1].key, "not run", None, None, None, ""),
    ]
