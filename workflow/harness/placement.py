"""Where a run's processes go: this machine, or the nodes of a SLURM allocation.

Inside a multi-node allocation the server runs on the first node and the client processes are
spread round-robin over the others, each started with `srun` as a one-task step on its node;
a monitor wrapper on that node samples the real process (psutil cannot see across nodes).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any


class PlacementError(RuntimeError):
    """The requested placement is impossible here (no allocation, too few nodes, no srun)."""


@dataclass(frozen=True, slots=True)
class Placement:
    kind: str  # local | slurm
    nodes: tuple[str, ...] = ()
    node_addrs: dict[str, str] = field(default_factory=dict)
    monitor_dir: str | None = None  # slurm: where node-side monitors write their CSVs
    # Why a run placed auto inside a multi-node allocation stayed on one node.
    note: str | None = None

    @property
    def server_node(self) -> str | None:
        return self.nodes[0] if self.nodes else None

    def client_node(self, index: int) -> str | None:
        others = self.nodes[1:] or self.nodes
        return others[index % len(others)] if others else None

    def server_bind_host(self) -> str:
        # Across nodes the server must accept on its node's interfaces, not only loopback.
        return "0.0.0.0" if self.kind == "slurm" else "127.0.0.1"

    def server_connect_host(self) -> str:
        if self.kind == "slurm" and self.server_node:
            return self.node_addrs.get(self.server_node, self.server_node)
        return "127.0.0.1"

    @property
    def stop_signal(self) -> signal.Signals:
        """The signal that stops a process gracefully through its launcher.

        srun turns SIGTERM (and SIGHUP, SIGQUIT) into SIGKILL of its tasks at once, so the
        prototype could not flush its logs; with --disable-status it forwards a single SIGINT,
        which monitors.wrap passes on and the contract treats like SIGTERM.
        """
        return signal.SIGINT if self.kind == "slurm" else signal.SIGTERM

    def prefix(self, role: str, index: int, name: str | None = None) -> list[str]:
        """Command prefix that starts the role's process where it belongs; name is the
        process's name in the run (server, client-<first player>), used for its monitor CSV."""
        if self.kind == "local":
            return []
        node = self.server_node if role == "server" else self.client_node(index)
        return [
            "srun", "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--overlap",
            "--kill-on-bad-exit=0", "--quiet", "--unbuffered", "--disable-status",
            sys.executable, "-m", "monitors.wrap", "--name", name or f"{role}-{index}",
            "--out-dir", self.monitor_dir or ".", "--",
        ]  # fmt: skip

    def describe(self) -> dict[str, Any]:
        if self.kind == "local":
            return {"kind": "local", **({"note": self.note} if self.note else {})}
        return {
            "kind": "slurm",
            "job_id": os.environ.get("SLURM_JOB_ID"),
            "nodes": list(self.nodes),
            "node_addrs": self.node_addrs,
            "server_node": self.server_node,
        }


def _hostnames(nodelist: str) -> list[str]:
    out = subprocess.run(
        ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=10
    )
    if out.returncode != 0:
        raise PlacementError(f"scontrol show hostnames {nodelist}: {out.stderr.strip()}")
    return out.stdout.split()


def _node_addr(node: str) -> str:
    out = subprocess.run(
        ["scontrol", "show", "node", node], capture_output=True, text=True, timeout=10
    )
    m = re.search(r"\bNodeAddr=(\S+)", out.stdout)
    return m.group(1) if m else node


# What the harness needs of the job's environment: the allocation, and where the cluster's
# configuration is when it is not in /etc/slurm.
RESTORED = ("SLURM_CONF", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES")


def _restore_job_environment() -> None:
    """Snakemake's SLURM job step strips every SLURM_* variable but the job id before it runs
    a job. The batch script that started the step still has them: take the ones the harness
    needs from the nearest ancestor process of the same job."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job or all(k in os.environ for k in RESTORED):
        return
    import psutil

    try:
        ancestors = psutil.Process().parents()
    except psutil.Error:
        return
    for proc in ancestors:
        try:
            env = proc.environ()
        except psutil.Error:
            continue
        # The closest ancestors are stripped too; the batch script has the allocation.
        if env.get("SLURM_JOB_ID") == job and "SLURM_JOB_NODELIST" in env:
            for key in RESTORED:
                if key in env and key not in os.environ:
                    os.environ[key] = env[key]
            return


def _allocation() -> tuple[str | None, int]:
    """(node list, node count) of the enclosing SLURM job; asked of slurmctld when the
    environment does not say."""
    _restore_job_environment()
    nodelist = os.environ.get("SLURM_JOB_NODELIST")
    if nodelist:
        return nodelist, int(os.environ.get("SLURM_JOB_NUM_NODES", "1") or "1")
    job = os.environ.get("SLURM_JOB_ID")
    if not job or shutil.which("scontrol") is None:
        return None, 1
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=10
    )
    nodes = re.search(r"\bNodeList=(\S+)", out.stdout)
    count = re.search(r"\bNumNodes=(\d+)", out.stdout)
    if out.returncode != 0 or nodes is None or nodes.group(1) == "(null)":
        return None, 1
    return nodes.group(1), int(count.group(1)) if count else 1


def decide(
    requested: str, monitor_dir: str | None = None, one_node_for: str | None = None
) -> Placement:
    """local, slurm, or auto (slurm inside a multi-node allocation, else local). one_node_for:
    why this run needs its server and players on one machine (a network profile the emulator
    applies between them); auto then stays on this node, saying so in the run's placement."""
    nodelist, count = _allocation() if requested != "local" else (None, 1)
    multi = count > 1
    if requested == "local" or (requested == "auto" and not (nodelist and multi)):
        return Placement("local")
    if requested == "auto" and one_node_for:
        return Placement(
            "local", note=f"on one node of the {count}-node allocation: {one_node_for}"
        )
    if not nodelist:
        raise PlacementError("placement slurm needs a SLURM allocation (SLURM_JOB_NODELIST unset)")
    if shutil.which("srun") is None:
        raise PlacementError("placement slurm needs srun on PATH")
    nodes = tuple(_hostnames(nodelist))
    return Placement("slurm", nodes, {n: _node_addr(n) for n in nodes}, monitor_dir)
