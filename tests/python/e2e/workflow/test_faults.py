"""The fault suite: each fault of the drill (workflow/bench/faults.py) injected into a short
campaign of the reference prototype, asserting its outcome: the status it must end in, no
process or namespace left behind, no finished run lost or changed. `netstick bench faults`
runs the same drill and writes the counts to data/bench/faults.json."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from workflow.bench import faults

from support.marks import needs_reference_binary, needs_snakemake

pytestmark = [needs_reference_binary, needs_snakemake]


def _assert_held(res: faults.FaultResult) -> None:
    assert res.correct, (
        f"{res.fault}: expected {res.expected}; observed {res.observed}; {res.notes}"
    )
    assert res.orphans == [], res.orphans
    assert (res.runs_lost, res.runs_changed) == (0, 0)


def test_bad_types_in_defaults_are_named_not_a_traceback(tmp_path: Path) -> None:
    _assert_held(faults.bad_defaults(tmp_path))


def test_server_killed_mid_run_leaves_its_exit_code(tmp_path: Path) -> None:
    _assert_held(faults.server_sigkill(tmp_path))


def test_stopped_player_times_out_and_is_killed(tmp_path: Path) -> None:
    _assert_held(faults.player_sigstop(tmp_path))


def test_frozen_server_gives_a_run_flagged_stalled_with_its_cause(tmp_path: Path) -> None:
    res = faults.server_sigstop(tmp_path)
    _assert_held(res)
    assert "no server tick for" in res.observed


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None, reason="a tmpfs needs root and mount"
)
def test_full_disk_fails_runs_clearly_and_touches_no_finished_run(tmp_path: Path) -> None:
    _assert_held(faults.disk_full(tmp_path))


def test_sigint_to_the_workflow_group_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    _assert_held(faults.group_sigint(tmp_path))


def test_sigkilled_workflow_resumes_without_overlapping_the_orphaned_run(tmp_path: Path) -> None:
    res = faults.workflow_sigkill(tmp_path)
    _assert_held(res)
    # The drill really left a job running without its Snakemake.
    assert res.notes["job_outlived_snakemake"]


def test_a_group_killed_workflow_lists_and_sets_aside_the_dead_runs_work(tmp_path: Path) -> None:
    res = faults.group_sigkill(tmp_path)
    _assert_held(res)
    assert res.notes["left"], res.notes


def test_a_key_twice_zero_overrides_and_an_unbudgeted_long_campaign_are_refused(
    tmp_path: Path,
) -> None:
    res = faults.bad_campaign_input(tmp_path)
    _assert_held(res)
    assert "line" in res.notes["duplicate_key"], res.notes  # both lines named
