"""SLURM accounting on the throw-away test cluster: slurmdbd + MariaDB, so `sacct` works.

Snakemake's slurm executor asks sacct for the state of its jobs; these tests check that the
cluster of tests/python/support/slurm_cluster.py, started with accounting=True, answers sacct
with the final state of finished, failed and cancelled jobs, that it answers the executor
plugin's own query, and that the clean-up after a killed session leaves no daemon behind (that
stop() leaves nothing, the session fixture's teardown checks: e2e/slurm/conftest.py).

Skips when not root or when slurm-wlm, munge, slurmdbd or mariadb-server are not installed
(the skip message says which and how to install them).
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from support import slurm_cluster as sc
from support.paths import SUPPORT

SACCT_TIMEOUT_S = 10.0  # records reach the database 1-3 s after a job ends
# A batch job here starts ~3 s after sbatch (the scheduler batches submissions) and runs for well
# under a second; sbatch --wait looks after 2 s, then 8 s later, so the first one takes 10 s.
JOB_TIMEOUT_S = 60.0
SACCT_FORMAT = ("JobID", "State", "NodeList", "ExitCode")
TERMINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


@pytest.fixture
def cluster(slurm_cluster: sc.SlurmCluster) -> sc.SlurmCluster:
    """The session's cluster (e2e/slurm/conftest.py), which has accounting."""
    return slurm_cluster


def _sacct(
    cluster: sc.SlurmCluster, job_id: str, timeout_s: float = SACCT_TIMEOUT_S
) -> dict[str, str]:
    """The job's allocation record once it shows a final state (polled, bounded)."""
    deadline = time.monotonic() + timeout_s
    out = ""
    while time.monotonic() < deadline:
        argv = ["sacct", "-X", "-n", "-P", "-o", ",".join(SACCT_FORMAT), "-j", job_id]
        out = cluster.run(argv).stdout
        for line in out.splitlines():
            row = dict(zip(SACCT_FORMAT, line.split("|"), strict=True))
            # Right after the job ends, a query may still see a placeholder row.
            if row["JobID"] == job_id and row["State"].startswith(TERMINAL_STATES):
                return row
        time.sleep(0.2)
    raise AssertionError(f"no final sacct record of job {job_id} in {timeout_s} s: {out!r}")


def _sbatch(cluster: sc.SlurmCluster, *args: str, wait: bool = True) -> str:
    argv = ["sbatch", "--parsable", "-p", sc.PARTITION, "-o", "/dev/null", *args]
    if wait:
        argv.insert(1, "--wait")
    # Not checked: with --wait, sbatch exits with the job's exit code.
    out = cluster.run(argv, timeout_s=JOB_TIMEOUT_S, check=False)
    job_id = out.stdout.strip().split(";")[0]
    assert job_id.isdigit(), f"sbatch said {out.stdout!r} {out.stderr!r}"
    return job_id


def test_a_finished_two_node_job_is_completed_in_sacct(cluster: sc.SlurmCluster) -> None:
    job = _sbatch(cluster, "-N2", "--wrap", "srun true")
    row = _sacct(cluster, job)
    assert row["State"] == "COMPLETED", row
    assert row["NodeList"] == "node[1-2]", row
    assert row["ExitCode"] == "0:0", row


def test_a_job_that_exits_3_is_failed_with_its_exit_code(cluster: sc.SlurmCluster) -> None:
    # Not --wait: sacct is polled while the job is pending and running, as Snakemake does.
    job = _sbatch(cluster, "--wrap", "exit 3", wait=False)
    row = _sacct(cluster, job, timeout_s=JOB_TIMEOUT_S)
    assert row["State"] == "FAILED", row
    assert row["ExitCode"] == "3:0", row


def test_a_cancelled_job_is_cancelled_in_sacct(cluster: sc.SlurmCluster) -> None:
    job = _sbatch(cluster, "--wrap", "sleep 60", wait=False)
    deadline = time.monotonic() + 15
    while cluster.run(["squeue", "-h", "-j", job, "-o", "%T"]).stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, f"job {job} did not start"
        time.sleep(0.1)
    cluster.run(["scancel", job])
    row = _sacct(cluster, job)
    assert row["State"].startswith("CANCELLED"), row  # "CANCELLED by 0"


def test_the_slurm_executor_plugins_own_query_sees_the_job(cluster: sc.SlurmCluster) -> None:
    # The command the executor runs to learn its jobs' states (it names jobs by run id).
    status = pytest.importorskip("snakemake_executor_plugin_slurm.job_status_query")
    run_id = str(uuid.uuid4())
    job = _sbatch(cluster, "-J", run_id, "--wrap", "true", wait=False)
    _sacct(cluster, job, timeout_s=JOB_TIMEOUT_S)
    # Its query selects by time window, which the first record of a finished job (eligible
    # time still unknown) is outside of; the full record follows within about a second.
    argv = shlex.split(status.query_job_status_sacct(run_id))
    deadline = time.monotonic() + SACCT_TIMEOUT_S
    while (out := cluster.run(argv).stdout.split()) != [f"{job}|COMPLETED"]:
        assert time.monotonic() < deadline, f"{shlex.join(argv)} said {out}"
        time.sleep(0.2)


def _daemons_of(root: Path) -> list[str]:
    """Every process named like a cluster daemon that mentions root, and any other process
    that still runs with root's configuration (a job, srun, slurmstepd)."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            mentions = str(root) in " ".join(proc.cmdline()) or proc.environ().get(
                "SLURM_CONF", ""
            ).startswith(str(root))
        except psutil.Error:
            continue
        if mentions:
            found.append(f"{proc.pid} {proc.info['name']}")
    return found


def test_cleanup_stale_stops_the_accounting_daemons_of_a_killed_session() -> None:
    reason = sc.unavailable_reason(accounting=True)
    if reason is not None:
        pytest.skip(reason)
    # A session that dies by SIGKILL with its cluster up: its daemons run on, in their own
    # sessions, until the next start (or an explicit cleanup_stale) finds the dead owner.
    code = (
        f"import sys, time; sys.path.insert(0, {str(SUPPORT.parent)!r}); "
        "from support import slurm_cluster as sc; "
        "c = sc.SlurmCluster.start(accounting=True); print(c.root, flush=True); time.sleep(60)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    root = None
    try:
        assert owner.stdout is not None
        ready, _, _ = select.select([owner.stdout], [], [], sc.START_TIMEOUT_S + 5)
        assert ready, "the owner session did not start its cluster"
        line = owner.stdout.readline().strip()
        # Checked before use: an empty line would make Path("."), which every process "names".
        assert Path(line).name.startswith(sc.DIR_PREFIX), f"the owner said {line!r}"
        root = Path(line)
        assert root.is_dir(), root
        pids = sc.session_daemon_pids(root)
        assert len(pids) == 6, pids  # munged, mariadbd, slurmdbd, slurmctld, 2 slurmd
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=5)
        assert [p for p in pids if psutil.pid_exists(p)] != []  # they outlive their owner
        assert root in sc.cleanup_stale(root.parent)
        assert not root.exists()
        assert _daemons_of(root) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if root is not None:  # whatever happened above, nothing of it survives the test
            sc.kill_session_daemons(root)
