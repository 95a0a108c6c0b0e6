"""Run records: a record depends only on its run directory, so a resumed campaign that finds the
run already complete (Snakemake deleted the record of a job it counted as incomplete) writes
the same record byte for byte; and failures a retry cannot mend are final at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow import cli
from workflow.campaign import expand as campaigns
from workflow.campaign import progress, records

from support import workflow_runner as wr


def _plan(tmp_path: Path, environment: dict[str, str] | None = None) -> campaigns.Plan:
    manifest = wr.fake_manifest(tmp_path / "proto", environment)
    return campaigns.plan(wr.campaign_file(tmp_path, "rec", manifest, repetitions=1))


def test_record_of_an_already_complete_run_is_byte_identical(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    (run,) = plan.runs
    raw = tmp_path / "raw"
    code, rec = records.execute(run, plan.name, attempt=1, attempts=3, raw=raw)
    assert code == 0 and rec is not None and rec["status"] == "ok"
    path = raw / plan.name / run.cell_id / f"{run.run_id}.json"
    first = path.read_bytes()
    assert rec["attempt"] == 1 and rec["harness_wall_s"] > 0
    path.unlink()
    code, again = records.execute(run, plan.name, attempt=2, attempts=3, raw=raw)
    assert code == 0 and again == rec
    assert path.read_bytes() == first


def test_bad_arguments_are_final_on_the_first_attempt(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"FAKE_PROTOTYPE_MODE": "bad-args"})
    (run,) = plan.runs
    raw = tmp_path / "raw"
    code, rec = records.execute(run, plan.name, attempt=1, attempts=3, raw=raw)
    assert code == 0 and rec is not None
    assert rec["status"] == "failed" and rec["attempt"] == 1
    assert rec["not_retried"] == (
        "server: exit code 2 (bad arguments) fails again with the same arguments"
    )
    on_disk = json.loads((raw / plan.name / run.cell_id / f"{run.run_id}.json").read_text())
    assert on_disk == rec


def test_a_failure_that_may_pass_next_time_is_retried_without_a_record(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"FAKE_PROTOTYPE_MODE": "client-fail"})
    (run,) = plan.runs
    raw = tmp_path / "raw"
    code, rec = records.execute(run, plan.name, attempt=1, attempts=2, raw=raw)
    assert (code, rec) == (1, None)
    assert not (raw / plan.name / run.cell_id / f"{run.run_id}.json").exists()
    code, rec = records.execute(run, plan.name, attempt=2, attempts=2, raw=raw)
    assert code == 0 and rec is not None and rec["reason"] == "client_exit"
    assert rec["not_retried"] is None and len(rec["failed_attempts"]) == 2


def test_a_job_runs_the_cell_plan_json_holds_without_the_campaign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`netstick campaign run-one PLAN.json KEY` (each Snakemake job) takes its cell from the
    written plan: with the campaign file gone it still runs, and the record holds plan.json's
    cell; a key the plan lacks is bad input naming the plan."""
    plan = _plan(tmp_path)
    (run,) = plan.runs
    raw = tmp_path / "raw"
    plan_json = progress.write_plan(plan, raw)
    plan.path.unlink()
    assert cli.main(["campaign", "run-one", str(plan_json), run.key]) == 0
    record = json.loads((raw / plan.name / run.cell_id / f"{run.run_id}.json").read_text())
    meta = json.loads((raw / plan.name / run.cell_id / run.run_id / "meta.json").read_text())
    assert record["status"] == "ok"
    assert meta["cell"] == json.loads(plan_json.read_text())["runs"][0]["cell"]
    assert cli.main(["campaign", "run-one", str(plan_json), "nope/r1"]) == 2
    err = capsys.readouterr().err
    assert str(plan_json) in err and "'nope/r1' is not a run of this plan" in err
