"""The workflow on a real SLURM cluster that the tests start (munge, MariaDB, slurmdbd,
slurmctld, two slurmd for the fake nodes node1 and node2), through a profile made from the
shipped das6 profile: every run is one SLURM job on exclusive nodes, placed by the harness,
tracked by Snakemake's SLURM executor through sacct."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from workflow.bench import scratch

from support import slurm_cluster as sc
from support import workflow_runner as wr
from support.paths import REPO


@pytest.fixture
def cluster(slurm_cluster: sc.SlurmCluster) -> sc.SlurmCluster:
    """The session's cluster (e2e/slurm/conftest.py), which has accounting."""
    return slurm_cluster


def das6_like_profile(root: Path, cluster: sc.SlurmCluster, players_per_node: int) -> Path:
    """profiles/das6 with what differs on the test cluster: its partition, its account,
    small memory, quick status polling, and fewer players per node (to force several nodes)."""
    shipped = REPO / "profiles" / "das6"
    doc = yaml.safe_load((shipped / "config.yaml").read_text())
    doc["default-resources"].update(
        slurm_partition=cluster.partition, slurm_account="root", mem_mb=200
    )
    doc["slurm-init-seconds-before-status-checks"] = 2
    doc["latency-wait"] = 5
    workflow_config = yaml.safe_load((shipped / doc["configfile"]).read_text())
    workflow_config["players_per_node"] = players_per_node
    profile = root / "das6"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "config.yaml").write_text(yaml.safe_dump(doc))
    (profile / doc["configfile"]).write_text(yaml.safe_dump(workflow_config))
    return profile


def run_slurm(
    root: Path, cluster: sc.SlurmCluster, campaign: Path | str, *config: str, ppn: int = 500
) -> subprocess.CompletedProcess[str]:
    profile = das6_like_profile(root, cluster, ppn)
    return scratch.run(
        root, Path(campaign) if "/" in str(campaign) else campaign,  # type: ignore[arg-type]
        "--profile", str(profile),
        config=list(config), timeout_s=600, env=cluster.env,
    )  # fmt: skip


def sacct_states(cluster: sc.SlurmCluster, job_ids: list[str]) -> dict[str, str]:
    deadline = time.monotonic() + 15  # records reach the database 1-3 s after a job ends
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        out = cluster.run(
            ["sacct", "-n", "-P", "-X", "-o", "JobID,State,NodeList", "-j", ",".join(job_ids)],
            check=False,
        )
        states = {
            line.split("|")[0]: line.split("|")[1].split()[0]
            for line in out.stdout.splitlines()
            if line.count("|") >= 2
        }
        if set(job_ids) <= set(states) and "RUNNING" not in states.values():
            break
        time.sleep(0.5)
    return states


def test_shortened_quick_campaign_through_das6_profile(
    tmp_path: Path, cluster: sc.SlurmCluster
) -> None:
    # 100 players per node: quick's 100-player runs get 1 server node + 1 client node.
    res = run_slurm(
        tmp_path, cluster, "quick", "repetitions=1", "duration_s=2", "prototypes=reference",
        ppn=100,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    raw = tmp_path / "data" / "raw" / "quick"
    recs = list(scratch.records(raw).values())
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    jobs = sorted({str(r["job"]["slurm_job_id"]) for r in recs})
    assert len(jobs) == 6, "one SLURM job per run"
    states = sacct_states(cluster, jobs)
    assert set(states.values()) == {"COMPLETED"}, states

    # Multi-node placement: the server on the first node, the players on the other.
    for r in recs:
        meta = json.loads((raw / r["cell_id"] / r["run_id"] / "meta.json").read_text())
        place = meta["placement"]
        assert place["kind"] == "slurm" and place["nodes"] == ["node1", "node2"], place
        assert place["server_node"] == "node1"
        assert meta["isolation"] == "none"
        prefixes = " ".join(" ".join(p) for p in meta["launch_prefixes"].values())
        assert "--nodelist=node1" in prefixes and "--nodelist=node2" in prefixes
    assert (tmp_path / "report" / "quick" / "index.html").is_file()
    assert "== campaign quick: 6 of 6 runs ok" in out


def test_failing_run_is_retried_and_its_failure_kept(
    tmp_path: Path, cluster: sc.SlurmCluster
) -> None:
    manifest = wr.fake_manifest(
        tmp_path / "proto",
        {"FAKE_PROTOTYPE_MODE": "fail-once", "FAKE_PROTOTYPE_STATE_DIR": str(tmp_path / "st")},
    )
    camp = wr.campaign_file(tmp_path, "slurm-retry", manifest, repetitions=1)
    res = run_slurm(tmp_path, cluster, camp, "retries=1", ppn=10)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    [rec] = scratch.records(tmp_path / "data" / "raw" / "slurm-retry").values()
    assert rec["status"] == "ok" and rec["attempt"] == 2
    [failure] = rec["failed_attempts"]
    assert failure["reason"] in {"not_ready", "server_exit"}
    # Snakemake's job step retries inside the same allocation; the job then completes.
    assert failure["slurm_job_id"] == rec["job"]["slurm_job_id"]
    job = str(rec["job"]["slurm_job_id"])
    assert sacct_states(cluster, [job])[job] == "COMPLETED"
    assert "failed attempts kept (1)" in out


def test_cancelled_job_is_reported(tmp_path: Path, cluster: sc.SlurmCluster) -> None:
    manifest = wr.fake_manifest(tmp_path / "proto")
    camp = wr.campaign_file(tmp_path, "slurm-cancel", manifest, repetitions=1, duration_s=60)
    profile = das6_like_profile(tmp_path, cluster, 10)
    (tmp_path / "work").mkdir()
    proc = subprocess.Popen(
        scratch.argv(tmp_path, camp, "--profile", str(profile), config=["retries=0"]),
        cwd=REPO, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        raw = tmp_path / "data" / "raw" / "slurm-cancel"
        deadline = time.monotonic() + 120
        running: list[str] = []
        while time.monotonic() < deadline and proc.poll() is None:
            out = cluster.run(["squeue", "-h", "-t", "R", "-o", "%i"], check=False)
            running = out.stdout.split()
            if running and any(raw.glob("*/.r1.tmp-*/logs/server.meta.json")):
                break
            time.sleep(0.5)
        assert running, "the run's job never started"
        cluster.run(["scancel", *running])
        out_text, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0
    summary = json.loads((raw / "summary.json").read_text())
    assert summary["runs"]["not_run"] == 1
    [entry] = summary["failed_attempts"]
    [attempt] = entry["attempts"]
    assert attempt["reason"] == "interrupted"
    assert str(attempt["slurm_job_id"]) == running[0]
    assert attempt["slurm_state"] == "CANCELLED"
    assert "interrupted (CANCELLED)" in out_text
