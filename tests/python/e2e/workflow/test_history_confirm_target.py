"""The workflow's `confirm` target (a dry run): it chains the history import, the nightly
decision and the confirming re-run after the night's tables, without waiting for the report."""

from __future__ import annotations

from pathlib import Path

from workflow.bench import scratch

from support.marks import needs_snakemake


@needs_snakemake
def test_snakemake_confirm_target_chains_import_decide_and_rerun(tmp_path: Path) -> None:
    res = scratch.run(tmp_path, "quick", "-n", targets=["confirm"])
    assert res.returncode == 0, res.stderr[-2000:]
    jobs = res.stdout + res.stderr
    for rule in ("history_import", "history_decide", "confirm_rerun", "ingest"):
        assert f"rule {rule}:" in jobs or f"\n{rule} " in jobs, rule
    assert "render_report" not in jobs  # a decision does not wait for the report
