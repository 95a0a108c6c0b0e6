"""Snakemake's own planning of a campaign with a planted regression (a benchmark flag): refused,
naming the campaign file, the key and why, unless a bench runs it on its own scratch campaign
(workflow.campaign.benchmark.bench_env). Dry runs: nothing executes."""

from __future__ import annotations

from pathlib import Path

from workflow.bench import scratch
from workflow.campaign.benchmark import bench_env

from support.marks import needs_snakemake

pytestmark = needs_snakemake


def test_snakemake_plans_a_planted_campaign_only_for_the_bench(tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    doc = scratch.campaign_doc(
        "planted",
        "the reference with a planted regression",
        {"name": "reference", "transports": ["tcp"]},
        block="b",
        seed=3,
        repetitions=1,
        defaults={"duration_s": 2, "extra_server_flags": ["-plant-cpu-ns-per-msg", "500"]},
    )
    camp = scratch.campaign_file(root, doc)

    refused = scratch.run(root, camp, "-n", timeout_s=120)
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert f"{camp}: matrix.0 (b): key defaults.extra_server_flags:" in out, out
    assert "is benchmark-only: it plants a regression" in out, out

    planned = scratch.run(root, camp, "-n", timeout_s=120, env=bench_env(root))
    out = planned.stdout + planned.stderr
    assert planned.returncode == 0, out
    assert any(line.split() == ["run", "1"] for line in out.splitlines()), out
    # The bench's variable with a user's data directory: still refused.
    elsewhere = scratch.run(
        root, camp, "-n", config=[f"data_dir={tmp_path / 'data'}"], env=bench_env(root)
    )
    assert elsewhere.returncode != 0 and "benchmark-only" in elsewhere.stderr + elsewhere.stdout
