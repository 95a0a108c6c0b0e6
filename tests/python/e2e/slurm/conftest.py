"""The SLURM tier: one real cluster for the whole session (support/slurm_cluster.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import psutil
import pytest

from support import slurm_cluster as sc


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[sc.SlurmCluster]:
    """A real SLURM 22.05 cluster on this machine (node1, node2 in partition `netstick`, the
    optional node `localhost` in partition `local`), with accounting (MariaDB + slurmdbd, so
    sacct works as on a real cluster).

    Clients reach it through cluster.env (SLURM_CONF). Skips when not root or when slurm-wlm,
    munge, slurmdbd or mariadb-server are not installed. At the end of the session it is stopped
    with a two-node job still running, and nothing of it may be left: no daemon, no job step, no
    process that ran with its configuration, no directory.
    """
    reason = sc.unavailable_reason(accounting=True)
    if reason is not None:
        pytest.skip(reason)
    with sc.SlurmCluster.start(accounting=True, with_localhost=True) as cluster:
        yield cluster
        root = cluster.root
        daemons = {d.name: d.popen.pid for d in cluster.daemons if d.popen is not None}
        # The sweep behind the pid files finds exactly these.
        assert sorted(sc.session_daemon_pids(root)) == sorted(daemons.values())
        job = cluster.run(
            ["sbatch", "--parsable", "-p", sc.PARTITION, "-N2", "-o", "/dev/null",
             "--wrap", "srun sleep 60"]
        ).stdout.strip()  # fmt: skip
        deadline = time.monotonic() + 10
        while len(sc.stepd_pids(root, job)) < 3:  # batch step + one step per node
            assert time.monotonic() < deadline, "the job's steps did not start"
            time.sleep(0.1)
    # stop() raised already if a daemon or a step survived SIGKILL; look again, independently.
    assert sorted(daemons) == [
        "mariadbd", "munged", "slurmctld", "slurmd-localhost", "slurmd-node1", "slurmd-node2",
        "slurmdbd",
    ]  # fmt: skip
    assert [p for p in daemons.values() if psutil.pid_exists(p)] == []
    assert sc.stepd_pids(root) == [] and sc.session_daemon_pids(root) == []
    left = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.environ().get("SLURM_CONF", "").startswith(str(root)):
                left.append(f"{proc.pid} {proc.info['name']}")
        except psutil.Error:
            continue
    assert left == [], f"processes that ran with the cluster's configuration: {left}"
    if os.environ.get("NETSTICK_SLURM_KEEP") != "1":
        assert not root.exists()
