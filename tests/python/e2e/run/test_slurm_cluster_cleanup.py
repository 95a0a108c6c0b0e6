"""The test cluster's clean-up after a session that died (support/slurm_cluster.py): it stops
the daemons of dead sessions only, and never a process whose pid merely looks like one of them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support import slurm_cluster as sc


def test_cleanup_stale_stops_only_the_daemons_of_dead_sessions(tmp_path: Path) -> None:
    stale = tmp_path / f"{sc.DIR_PREFIX}stale"
    (stale / "run").mkdir(parents=True)
    live = tmp_path / f"{sc.DIR_PREFIX}live"
    live.mkdir()
    (live / "owner").write_text(f"{os.getpid()}\n")
    gone = subprocess.Popen(["true"])
    gone.wait()
    (stale / "owner").write_text(f"{gone.pid}\n")  # its session died
    env = {**os.environ, "SLURM_CONF": str(stale / "slurm.conf")}
    daemon = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)  # pid reused, say
    try:
        (stale / "run" / "slurmd-node1.pid").write_text(f"{daemon.pid}\n")
        (stale / "run" / "slurmctld.pid").write_text(f"{stranger.pid}\n")
        assert sc.cleanup_stale(tmp_path) == [stale]
        assert daemon.wait(timeout=10) is not None
        assert stranger.poll() is None
        assert not stale.exists()
        assert live.exists()
    finally:
        for p in (daemon, stranger):
            p.kill()
            p.wait()
