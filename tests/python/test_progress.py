"""The end-of-campaign summary: a resumed campaign's share of time spent measuring counts only
the runs of this session (runs measured earlier took none of its wall time)."""

from __future__ import annotations

from pathlib import Path

import workflow_runner as wr

from workflow.campaign import expand as campaigns
from workflow.campaign import layout, progress
from workflow.files import write_json


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
