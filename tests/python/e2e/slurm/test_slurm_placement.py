"""SLURM placement for real: the harness inside a 2-node allocation of a local SLURM cluster.

Skips when not root or when slurm-wlm and munge are not installed (the fixture says so), and
the run tests also when prototypes/reference/bin/netstick-ref is not built.

The cluster (tests/python/support/slurm_cluster.py, session fixture `slurm_cluster` of
e2e/slurm/conftest.py) has two fake nodes in partition netstick,
node1 and node2, on this machine. Each test runs `netstick run-cell` as the command of
`salloc -N2`, exactly as on a real cluster: the harness sees SLURM_JOB_NODELIST, starts the
server with `srun --nodelist=node1` and the client processes with `srun --nodelist=node2`, each
through monitors.wrap. While a run goes on, a watcher thread looks at the real prototype
processes and reads, from their environment, which SLURM node and step they run in. A small
driver holds the allocation after the run until the test has checked that nothing of the run
is left: a leak must not hide behind the end of the job, which kills all its steps.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from prototypes.contract.checklogs import check_log_dir

from support import slurm_cluster as sc
from support.marks import needs_reference_binary
from support.paths import REFERENCE_BINARY, REPO

RUN_TIMEOUT_S = 60.0  # salloc + run-cell; a run takes ~5 s here
GONE_TIMEOUT_S = 5.0  # slurmstepd ends shortly after its step; init reaps within ~1 s
START_BUDGET_S = 5.0  # the session's cluster, accounting included, until every node is idle


def _manifest(tmp: Path) -> Path:
    """The reference manifest with players_per_process 2 and absolute paths.

    4 players then make 2 client processes, so that several srun steps share node2.
    """
    src = REPO / "prototypes" / "reference" / "prototype.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["players_per_process"] = 2
    doc["executable"] = str(REFERENCE_BINARY)
    doc["build"]["command"] = ["make", "-C", str(REPO), "build"]
    path = tmp / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def _cell(tmp: Path, **kw: Any) -> Path:
    doc: dict[str, Any] = {
        "prototype": str(_manifest(tmp)),
        "transport": "tcp",
        "players": 4,
        "workload": "stream",
        "params": {"size": 100, "rate": 30},
        "duration_s": 2,
        "isolation": "none",
        "placement": "slurm",
        "network_profile": "lan",
        "sample_interval_s": 0.25,
        "connect_timeout_s": 15,
        "port": _free_port(),  # not the harness's default 7777: other tests share this host
        "baseline_s": 0,  # no idle-traffic measurement: this test is about placement
    }
    doc.update(kw)
    path = tmp / "cell.json"
    path.write_text(json.dumps(doc))
    return path


class _Watcher(threading.Thread):
    """Records, every 0.1 s, the prototype processes whose command line mentions root."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = str(root)
        self.seen: dict[int, dict[str, Any]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for proc in psutil.process_iter(["name", "cmdline"]):
                cmd = proc.info["cmdline"] or []
                if proc.pid in self.seen or proc.info["name"] != REFERENCE_BINARY.name:
                    continue
                if self.root not in " ".join(cmd):
                    continue
                try:
                    env = proc.environ()
                    parent = proc.parent()
                    grand = parent.parent() if parent else None
                    self.seen[proc.pid] = {
                        "role": cmd[cmd.index("-role") + 1],
                        "node": env.get("SLURMD_NODENAME"),
                        "step": f"{env.get('SLURM_JOB_ID')}.{env.get('SLURM_STEP_ID')}",
                        "parent": " ".join(parent.cmdline()) if parent else "",
                        "grandparent": grand.name() if grand else "",
                    }
                except (psutil.Error, ValueError, IndexError):
                    continue

    def stop(self) -> dict[int, dict[str, Any]]:
        self.done.set()
        self.join(timeout=5)
        return self.seen


# Runs inside the allocation: run-cell, then tell the test and hold the allocation until the
# test has looked for leftovers, so that a process the harness failed to stop cannot hide
# behind the end of the job (which kills every step).
DRIVER = """
import subprocess, sys, time
from pathlib import Path
cell, out, sync = sys.argv[1:4]
run = subprocess.run([sys.executable, "-m", "workflow.cli.main", "run-cell", cell, "--out", out])
Path(sync, "done.tmp").write_text(str(run.returncode))
Path(sync, "done.tmp").rename(Path(sync, "done"))
deadline = time.monotonic() + 30
while not Path(sync, "release").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
sys.exit(run.returncode)
"""


def _run_in_allocation(
    cluster: sc.SlurmCluster, cell: Path, out: Path, watch: Path
) -> tuple[int, dict[int, dict[str, Any]]]:
    """`salloc -N2 <driver>` that runs `run-cell CELL --out OUT`; bounded.

    Returns run-cell's exit code and what the watcher saw. Checks, while the allocation still
    exists and again after it ended, that nothing of the run is left.
    """
    sync = watch / "sync"
    sync.mkdir()
    driver = watch / "driver.py"
    driver.write_text(DRIVER)
    argv = [
        "salloc", "-N2", "-p", cluster.partition, "--time=2", "--job-name=netstick-placement",
        sys.executable, str(driver), str(cell), str(out), str(sync),
    ]  # fmt: skip
    watcher = _Watcher(watch)
    watcher.start()
    p = subprocess.Popen(
        argv,
        cwd=REPO,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (sync / "done").exists():
            if p.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"salloc ... run-cell: exited with {p.poll()} or still running after "
                    f"{RUN_TIMEOUT_S:g} s without finishing the run"
                )
            time.sleep(0.05)
        seen = watcher.stop()
        code = int((sync / "done").read_text())
        job_id = _job_id(out)
        assert job_id in cluster.job_ids()  # the allocation is still there
        _assert_nothing_left(cluster, watch, job_id, allocation_alive=True)
        (sync / "release").touch()
        output, _ = p.communicate(timeout=RUN_TIMEOUT_S)
        assert p.returncode == code, output
        _assert_nothing_left(cluster, watch, job_id)
        return code, seen
    finally:
        watcher.stop()
        (sync / "release").touch()
        try:
            p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the cluster's teardown cancels the job
            p.communicate()


def _record(out: Path) -> Path:
    """The run's record: out when ok, else the one directory in out.failed/."""
    if out.exists():
        return out
    (record,) = out.with_name(f"{out.name}.failed").iterdir()
    return record


def _job_id(out: Path) -> str:
    meta = json.loads((_record(out) / "meta.json").read_text())
    return str(meta["placement"]["job_id"])


def _assert_nothing_left(
    cluster: sc.SlurmCluster, root: Path, job_id: str, allocation_alive: bool = False
) -> None:
    """No srun, wrapper, slurmstepd (of a step) or prototype of the run remains; with the
    allocation ended, no job either. Bounded: steps end within a second or two of their task."""
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while True:
        stray = []
        for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
            cmd = " ".join(proc.info["cmdline"] or [])
            if proc.info["status"] == "zombie" or "pytest" in cmd or str(root) not in cmd:
                continue
            if allocation_alive and "driver.py" in cmd:
                continue  # the driver holding the allocation
            stray.append(f"{proc.info['pid']} {cmd}")
        stray += [f"slurmstepd {p}" for p in sc.stepd_pids(cluster.root, job_id)]
        jobs = cluster.job_ids()
        if not stray and (allocation_alive or job_id not in jobs):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"left behind after {GONE_TIMEOUT_S:g} s: {stray} jobs={jobs}")
        time.sleep(0.1)


def _csv_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    return [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]


@needs_reference_binary
def test_reference_run_places_server_on_node1_and_clients_on_node2(
    slurm_cluster: sc.SlurmCluster, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    code, seen = _run_in_allocation(slurm_cluster, _cell(tmp_path), out, watch=tmp_path)
    assert code == 0, (_record(out) / "status.json").read_text()
    status = json.loads((out / "status.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    assert status["status"] == "ok", status
    assert status["exit_codes"] == {"server": 0, "client-0": 0, "client-2": 0}

    # Where the harness put each process: the srun prefixes it recorded name the node.
    where = meta["placement"]
    assert where["kind"] == "slurm"
    assert where["nodes"] == ["node1", "node2"]
    assert where["server_node"] == "node1"
    assert where["job_id"]
    prefixes = meta["launch_prefixes"]
    assert sorted(prefixes) == ["client-0", "client-2", "server"]
    assert prefixes["server"][0] == "srun"
    assert "--nodelist=node1" in prefixes["server"]
    for name in ("client-0", "client-2"):
        assert prefixes[name][0] == "srun"
        assert "--nodelist=node2" in prefixes[name], prefixes[name]
    assert meta["commands"]["server"][0] == str(REFERENCE_BINARY)  # no shell in between

    # Where the prototypes really ran: in a step of the job on that node, each a child of
    # monitors.wrap, which is a child of slurmstepd (not of srun, which stayed here).
    roles = sorted((s["role"], s["node"]) for s in seen.values())
    assert roles == [("client", "node2"), ("client", "node2"), ("server", "node1")], seen
    for s in seen.values():
        assert "-m monitors.wrap" in s["parent"], s
        assert s["grandparent"] == "slurmstepd", s
        assert s["step"].startswith(f"{where['job_id']}."), s
    assert len({s["step"] for s in seen.values()}) == 3  # one step per process

    # The node-side monitors sampled the prototypes themselves, into the run's record.
    # Named like the processes of the run (and their logs): server, client-<first player>.
    names = {f"monitor-{proc}.csv": proc for proc in ("server", "client-0", "client-2")}
    assert all((out / f).exists() for f in names), sorted(p.name for p in out.iterdir())
    for file, proc in names.items():
        rows = [r for r in _csv_rows(out / file) if r["proc"] == proc]
        assert len(rows) >= 3, f"{file}: {len(rows)} samples of {proc}"
        assert max(int(r["rss_bytes"]) for r in rows) > 1_000_000, file
        # A Go program runs several OS threads; the samples are of the prototype's tree.
        assert max(int(r["num_threads"]) for r in rows) >= 4, file
        last = rows[-1]
        assert float(last["cpu_user_s"]) + float(last["cpu_system_s"]) > 0, file

    assert check_log_dir(out / "logs") == []
    assert {"server.ticks.csv", "client-0.rtt.csv", "client-2.rtt.csv"} <= {
        p.name for p in (out / "logs").iterdir()
    }


@needs_reference_binary
def test_failed_run_in_allocation_is_recorded_and_leaves_nothing(
    slurm_cluster: sc.SlurmCluster, tmp_path: Path
) -> None:
    # The server cannot bind: this test holds its port (on every address, as the server binds).
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = int(held.getsockname()[1])
        out = tmp_path / "run"
        code, _ = _run_in_allocation(slurm_cluster, _cell(tmp_path, port=port), out, tmp_path)
    assert code == 1
    assert not out.exists()  # a failed run never sits where a good one would
    record = _record(out)
    status = json.loads((record / "status.json").read_text())
    meta = json.loads((record / "meta.json").read_text())
    assert status["status"] == "failed"
    assert status["reason"] == "server_exit", status
    assert status["exit_codes"]["server"] == 3  # CONTRACT.md: could not bind -host:-port
    assert "address already in use" in status["detail"], status["detail"]
    assert meta["placement"]["kind"] == "slurm"
    assert "--nodelist=node1" in meta["launch_prefixes"]["server"]


@needs_reference_binary
@pytest.mark.parametrize("ready_timeout_s", [0.001, 0.005, 0.03])
def test_server_not_ready_in_time_is_stopped_on_its_node(
    slurm_cluster: sc.SlurmCluster, tmp_path: Path, ready_timeout_s: float
) -> None:
    # The harness gives up while srun is starting the server's step: before srun handles
    # signals, while it holds them during the launch (SIGINT and SIGTERM wait, so the harness
    # SIGKILLs srun and srun's helper must cancel the step), or with the step running. In
    # every case the harness itself must stop the remote prototype, with the allocation alive.
    out = tmp_path / "run"
    code, _ = _run_in_allocation(
        slurm_cluster, _cell(tmp_path, ready_timeout_s=ready_timeout_s), out, tmp_path
    )
    assert code == 1
    status = json.loads((_record(out) / "status.json").read_text())
    assert status["reason"] == "not_ready", status


# -- the session's cluster itself (its teardown checks that stopping it leaves nothing) ---------


def test_the_optional_localhost_node_runs_jobs_of_its_own_partition(
    slurm_cluster: sc.SlurmCluster,
) -> None:
    assert slurm_cluster.node_states() == {"node1": "idle", "node2": "idle", "localhost": "idle"}
    on = slurm_cluster.run(["srun", "-p", sc.LOCAL_PARTITION, "printenv", "SLURMD_NODENAME"])
    assert on.stdout.strip() == "localhost"


@pytest.mark.perf
def test_the_cluster_starts_within_its_budget(slurm_cluster: sc.SlurmCluster) -> None:
    # About 2.2 s here for three nodes with accounting (MariaDB + slurmdbd) from a cold start.
    assert slurm_cluster.startup_s < START_BUDGET_S
