"""A real, throw-away SLURM 22.05 cluster on this machine, for tests of SLURM placement.

    with SlurmCluster.start() as cluster:           # ~2-3 s until every node is idle
        cluster.run(["srun", "-N2", "hostname"])   # clients see it through SLURM_CONF

What it starts, all as root and all from Debian's packages (slurm-wlm, munge):

- its own munged, with a fresh key and its own socket in the session directory
  (AuthInfo=socket=... points SLURM at it), so the system's /etc/munge and /run/munge are
  never touched and a munged already running on the machine does not matter;
- slurmctld and one slurmd per fake node (node1, node2, optionally localhost), every one in the
  foreground (-D) as a child of this process, all on 127.0.0.1 with a port of its own (random
  ports in 20000-29999 that were free a moment before; the kernel's ephemeral range is avoided
  because srun's own connections come from it).

Everything it writes (slurm.conf, munge key and socket, state and spool directories, logs, pid
files) lives in one fresh directory, /tmp/netstick-slurm-XXXX, and every SLURM daemon and client
finds the configuration through the SLURM_CONF environment variable: SLURM 22.05 honours it in
slurmctld, slurmd (hence slurmstepd, which gets the configuration from slurmd) and in every
client (sinfo, salloc, srun, scontrol, squeue, scancel). /etc/slurm/slurm.conf is never read or
written. `cluster.env` is os.environ plus SLURM_CONF; pass it to every SLURM command.

The two fake nodes are the same 2-core machine. Each claims CPUs=2; SlurmdParameters=
config_overrides makes slurmd accept the configured hardware instead of draining a node whose
description differs from what it probes. Jobs may therefore overlap on the physical cores,
which is what the harness's `srun --overlap` steps need. node1/node2 are listed before
localhost because with `localhost` first SLURM 22.05 fails with "Duplicated NodeHostName".

Teardown (stop(), also on any start-up failure and via the context manager) cancels the
cluster's jobs, stops every daemon by its pid file (SIGTERM, then SIGKILL after a grace), kills
any slurmstepd still serving one of this cluster's spool directories, then any daemon (munged,
mariadbd, slurmdbd, slurmctld, slurmd) whose command line or environment names the directory
but whose pid file did not say so (one killed during its start, say), and removes the
directory (kept when NETSTICK_SLURM_KEEP=1, for reading the logs, until the next session
starts). A directory left by a session whose owner died (kill -9) is cleaned the same way by the
next start (cleanup_stale).

Accounting (SlurmCluster.start(accounting=True); off by default): `sacct` works, which is what
Snakemake's slurm executor uses for job status. Two more daemons, from Debian's slurmdbd and
mariadb-server, also children of this process and also confined to the session directory:

- mariadbd with a fresh datadir (mariadb-install-db --no-defaults, ~0.7 s), its own socket, pid
  file, tmpdir and error log, listening only on 127.0.0.1 at a port of its own. --no-defaults
  keeps /etc/mysql out, so /var/lib/mysql, /run/mysqld and a system MariaDB are never touched.
  It runs as root (--user=root; the session directory is root's, mode 700). An --init-file
  creates the database slurm_acct_db and the user slurm@127.0.0.1 with a random password before
  the server serves its first client;
- slurmdbd -D, with slurmdbd.conf next to slurm.conf (slurmdbd 22.05 reads
  dirname($SLURM_CONF)/slurmdbd.conf; checked with strace: /etc/slurm is not looked at), mode
  600, owned by root (the SlurmUser), AuthInfo=socket= the cluster's munged, its own DbdPort,
  StorageHost=127.0.0.1 and StoragePort= mariadbd's port (TCP, not the socket: slurmdbd's
  MySQL client only finds a socket through the MYSQL_UNIX_PORT environment variable, and
  without it would try the system's /run/mysqld/mysqld.sock).

slurm.conf then says AccountingStorageType=accounting_storage/slurmdbd, AccountingStorageHost=
localhost, AccountingStoragePort=<DbdPort> and AccountingStoragePass=<the munge socket>:
AuthInfo does not cover the connection to slurmdbd, which without it is authenticated through
the system's /run/munge (slurmctld then dies with "no TRES from it"). slurmctld registers
cluster `netstick` itself and root's association exists from the start, so no sacctmgr step is
needed. Start order: munged, mariadbd (until it greets a client on its socket), slurmdbd (until
it listens), slurmctld, the slurmds; stop order is the reverse (STOP_ORDER). A finished job
reaches the database 1-3 s after it ends, so a caller polls sacct for it (a pending job may not
be there yet either). A cold start with accounting takes ~2.2 s here: mariadb-install-db
~0.7 s, slurmctld's first registration with the new database ~0.7 s.

Without accounting (AccountingStorageType=accounting_storage/none), `sacct` does not work and
Snakemake's slurm executor must be run with `slurm-status-command: squeue` (it hangs otherwise).
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import psutil

PACKAGES_HINT = "apt-get install -y --no-install-recommends slurm-wlm munge"
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sinfo", "squeue", "scontrol", "scancel", "srun", "salloc", "sbatch")
ACCOUNTING_PACKAGES_HINT = "apt-get install -y --no-install-recommends slurmdbd mariadb-server"
ACCOUNTING_PROGRAMS = ("/usr/sbin/slurmdbd", "/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db")
ACCOUNTING_CLIENTS = ("sacct",)
# Process names of every daemon a cluster may run, for the sweep that finds the ones no pid
# file names (see _session_daemon_pids).
DAEMON_NAMES = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")
DIR_PREFIX = "netstick-slurm-"
PORT_RANGE = (20000, 30000)  # below the ephemeral range (32768-60999) that outgoing sockets use
START_TIMEOUT_S = 15.0  # a cold start takes ~2.5 s here (+~2 s with accounting); generous
STOP_GRACE_S = 5.0
CMD_TIMEOUT_S = 10.0
FAKE_NODES = ("node1", "node2")
PARTITION = "netstick"
LOCAL_PARTITION = "local"
DB_NAME = "slurm_acct_db"
DB_USER = "slurm"
# InnoDB settings: slurmdbd logs "Database settings not recommended values" (an error line in
# every log read after a failure) below half of 1 GiB buffer pool, 64 MiB redo log and 900 s
# lock wait. The pool is reserved, not used: mariadbd stays at ~110 MB resident either way.
# No fsync per commit: the database is thrown away with the session.
MARIADB_OPTIONS = (
    "--innodb-buffer-pool-size=512M",
    "--innodb-log-file-size=64M",
    "--innodb-lock-wait-timeout=900",
    "--innodb-flush-log-at-trx-commit=0",
)
INSTALL_DB_TIMEOUT_S = 60.0  # ~0.6 s here


class ClusterError(RuntimeError):
    """The cluster could not be started or stopped; the message carries the daemons' logs."""


def unavailable_reason(accounting: bool = False) -> str | None:
    """Why a real cluster (with slurmdbd + MariaDB, if accounting) cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "a local SLURM cluster needs root (slurmd runs jobs as any user)"
    missing = [p for p in DAEMONS if not os.access(p, os.X_OK)]
    missing += [c for c in CLIENTS if shutil.which(c) is None]
    if missing:
        return f"SLURM/munge not installed (missing {', '.join(missing)}); {PACKAGES_HINT}"
    if accounting:
        missing = [p for p in ACCOUNTING_PROGRAMS if not os.access(p, os.X_OK)]
        missing += [c for c in ACCOUNTING_CLIENTS if shutil.which(c) is None]
        if missing:
            return (
                f"SLURM accounting (slurmdbd + MariaDB) not installed (missing "
                f"{', '.join(missing)}); {ACCOUNTING_PACKAGES_HINT}"
            )
    return None


def _write_private(path: Path, text: str) -> None:
    """Write a new file that only its owner can read (it holds a password)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _mariadb_greets(sock: Path) -> bool:
    """Whether mariadbd sends its handshake on sock, i.e. serves clients (init file done).

    mariadbd logs the probe as a Warning (an aborted connection): once per start.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(str(sock))
            return len(s.recv(1)) == 1
        except OSError:
            return False


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))  # slurmctld and slurmd listen on every address
        except OSError:
            return False
    return True


def pick_ports(n: int, rng: random.Random | None = None) -> list[int]:
    """n distinct ports of PORT_RANGE that are free right now."""
    rng = rng or random.Random()
    ports: list[int] = []
    for _ in range(2000):  # bounded: a nearly full range is an error, not a hang
        p = rng.randrange(*PORT_RANGE)
        if p not in ports and _port_free(p):
            ports.append(p)
            if len(ports) == n:
                return ports
    raise ClusterError(f"no {n} free TCP ports in {PORT_RANGE[0]}-{PORT_RANGE[1] - 1}")


@dataclass
class _Daemon:
    name: str
    pid_file: Path
    log_file: Path
    popen: subprocess.Popen[bytes] | None = None


@dataclass
class SlurmCluster:
    """A running cluster; build it with SlurmCluster.start()."""

    root: Path
    nodes: tuple[str, ...]
    partition: str = PARTITION
    ports: dict[str, int] = field(default_factory=dict)
    daemons: list[_Daemon] = field(default_factory=list)
    startup_s: float = 0.0

    # -- paths and environment --------------------------------------------------------------

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket"

    @property
    def dbd_conf(self) -> Path:
        """slurmdbd.conf: slurmdbd finds it in SLURM_CONF's directory."""
        return self.root / "slurmdbd.conf"

    @property
    def mariadb_socket(self) -> Path:
        return self.root / "run" / "mariadbd.sock"

    @property
    def accounting(self) -> bool:
        return "slurmdbd" in self.ports

    @property
    def env(self) -> dict[str, str]:
        """os.environ plus SLURM_CONF, minus SLURM_* variables of any enclosing allocation."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(
        self, argv: Sequence[str], timeout_s: float = CMD_TIMEOUT_S, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run a SLURM client command against this cluster."""
        out = subprocess.run(
            list(argv), env=self.env, capture_output=True, text=True, timeout=timeout_s
        )
        if check and out.returncode != 0:
            raise ClusterError(
                f"{' '.join(argv)} exited with {out.returncode}: {out.stderr.strip()}"
            )
        return out

    def node_states(self) -> dict[str, str]:
        """sinfo's state of every node (idle, mix, alloc, down*, unknown, ...)."""
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
        states: dict[str, str] = {}
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def job_ids(self) -> list[str]:
        out = self.run(["squeue", "-h", "-o", "%i"], check=False)
        return out.stdout.split()

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, for error messages."""
        parts = []
        for d in self.daemons:
            try:
                text = d.log_file.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                text = ["(no log)"]
            parts.append(f"--- {d.log_file}\n" + "\n".join(text))
        return "\n".join(parts)

    # -- start ----------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        *,
        with_localhost: bool = False,
        accounting: bool = False,
        timeout_s: float = START_TIMEOUT_S,
    ) -> SlurmCluster:
        """Write the configuration, start munged, slurmctld and the slurmds, wait until idle.

        with_localhost adds a third node `localhost` in partition `local`; accounting also
        starts MariaDB and slurmdbd (before slurmctld), so that sacct works.
        """
        reason = unavailable_reason(accounting)
        if reason is not None:
            raise ClusterError(reason)
        cleanup_stale()
        t0 = time.monotonic()
        root = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
        nodes = FAKE_NODES + (("localhost",) if with_localhost else ())
        cluster = cls(root=root, nodes=nodes)
        try:
            (root / "owner").write_text(f"{os.getpid()}\n")
            subs = ["munge", "state", "log", "run", *(f"spool/slurmd-{n}" for n in nodes)]
            for sub in subs + (["mariadb-tmp"] if accounting else []):
                (root / sub).mkdir(mode=0o700, parents=True)
            ports = pick_ports(1 + len(nodes) + (2 if accounting else 0))
            node_ports = dict(zip(nodes, ports[1 : 1 + len(nodes)], strict=True))
            cluster.ports = {"slurmctld": ports[0], **node_ports}
            if accounting:
                cluster.ports["slurmdbd"], cluster.ports["mariadbd"] = ports[-2:]
            cluster._write_config(accounting)
            cluster._start_munged()
            if accounting:
                cluster._start_accounting(t0 + timeout_s)
            cluster._start_daemon(
                "slurmctld", ["/usr/sbin/slurmctld", "-D", "-i"], root / "run/slurmctld.pid",
                root / "log/slurmctld.log",
            )  # fmt: skip
            for node in nodes:
                cluster._start_daemon(
                    f"slurmd-{node}", ["/usr/sbin/slurmd", "-D", "-N", node],
                    root / f"run/slurmd-{node}.pid", root / f"log/slurmd-{node}.log",
                )  # fmt: skip
            cluster._wait_idle(t0 + timeout_s)
        except BaseException:
            cluster.stop()
            raise
        cluster.startup_s = round(time.monotonic() - t0, 3)
        return cluster

    def _write_config(self, accounting: bool) -> None:
        r = self.root
        lines = [
            "# Written by tests/python/support/slurm_cluster.py for one test session.",
            "ClusterName=netstick",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={self.ports['slurmctld']}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            # No cgroups needed (and no systemd here): processes are tracked by parentage.
            "ProctrackType=proctrack/linuxproc",
            # No CPU binding: both fake nodes are the same two cores, and binding would pin
            # every node's first task onto the same core.
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "ReturnToService=2",
            f"SlurmctldPidFile={r}/run/slurmctld.pid",
            f"SlurmdPidFile={r}/run/slurmd-%n.pid",
            f"SlurmdSpoolDir={r}/spool/slurmd-%n",
            f"StateSaveLocation={r}/state",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"PlugStackConfig={r}/plugstack.conf",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",  # no memory accounting: jobs never wait for memory
            "SlurmdParameters=config_overrides",
            "EnforcePartLimits=ALL",  # an impossible -N is rejected instead of pending forever
            # Short waits so a test's teardown of a job takes seconds, not the 30 s default.
            "KillWait=2",
            "MinJobAge=60",
            "InactiveLimit=0",
            "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType="
            + ("accounting_storage/slurmdbd" if accounting else "accounting_storage/none"),
        ]
        if accounting:
            lines += [
                "AccountingStorageHost=localhost",
                f"AccountingStoragePort={self.ports['slurmdbd']}",
                # The munge socket for talking to slurmdbd: AuthInfo does not cover that
                # connection, which otherwise goes to the system's /run/munge/munge.socket.2.
                f"AccountingStoragePass={self.munge_socket}",
            ]
        for node in self.nodes:
            host = "" if node == "localhost" else f" NodeHostname={node}"
            lines.append(
                f"NodeName={node}{host} NodeAddr=127.0.0.1 Port={self.ports[node]} CPUs=2 "
                "Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=2000 "
                "State=UNKNOWN"
            )
        fake = ",".join(n for n in self.nodes if n != "localhost")
        lines.append(f"PartitionName={PARTITION} Nodes={fake} Default=YES MaxTime=60 State=UP")
        if "localhost" in self.nodes:
            lines.append(f"PartitionName={LOCAL_PARTITION} Nodes=localhost MaxTime=60 State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        (r / "plugstack.conf").write_text("")  # not /etc/slurm/plugstack.conf

    def _start_munged(self) -> None:
        key = self.root / "munge" / "munge.key"
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(128))  # a fresh key: nothing outside this cluster can talk to it
        m = self.root / "munge"
        self._start_daemon(
            "munged",
            [
                "/usr/sbin/munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={m}/munged.pid", f"--seed-file={m}/munged.seed",
                f"--log-file={self.root}/log/munged.log", "--num-threads=2",
            ],
            m / "munged.pid",
            self.root / "log/munged.log",
        )  # fmt: skip
        self._wait_for(lambda: self.munge_socket.exists(), "munged's socket", time.monotonic() + 5)

    def _start_accounting(self, deadline: float) -> None:
        """Start MariaDB, then slurmdbd, both in the session directory (see the module doc)."""
        r = self.root
        password = secrets.token_hex(16)
        datadir = r / "mariadb"
        common = [f"--datadir={datadir}", "--user=root", "--skip-name-resolve", *MARIADB_OPTIONS]
        self._run_install_db(
            ["/usr/bin/mariadb-install-db", "--no-defaults", *common,
             "--auth-root-authentication-method=socket", "--skip-test-db"]
        )  # fmt: skip
        # Run by mariadbd before it serves any client, so a client that was greeted also finds
        # the database and the user (an error in it makes mariadbd exit, which start() sees).
        init_sql = r / "mariadb-init.sql"
        _write_private(
            init_sql,
            f"CREATE DATABASE IF NOT EXISTS {DB_NAME};\n"
            f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
            f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';\n",
        )
        self._start_daemon(
            "mariadbd",
            [
                "/usr/sbin/mariadbd", "--no-defaults", *common, f"--socket={self.mariadb_socket}",
                f"--pid-file={r}/run/mariadbd.pid", f"--port={self.ports['mariadbd']}",
                "--bind-address=127.0.0.1", f"--tmpdir={r}/mariadb-tmp",
                f"--log-error={r}/log/mariadbd.log", f"--init-file={init_sql}",
            ],
            r / "run/mariadbd.pid",
            r / "log/mariadbd.log",
        )  # fmt: skip
        self._wait_for(
            lambda: self._daemon_exited("mariadbd") or _mariadb_greets(self.mariadb_socket),
            "mariadbd to accept connections",
            deadline,
        )
        self._raise_if_exited("mariadbd")
        # Mode 600 and owned by the SlurmUser (root, who writes it), or slurmdbd refuses it.
        _write_private(
            self.dbd_conf,
            "\n".join([
                "# Written by tests/python/support/slurm_cluster.py for one test session.",
                "AuthType=auth/munge",
                f"AuthInfo=socket={self.munge_socket}",
                "DbdHost=localhost",
                f"DbdPort={self.ports['slurmdbd']}",
                "SlurmUser=root",
                "DebugLevel=info",
                f"LogFile={r}/log/slurmdbd.log",
                f"PidFile={r}/run/slurmdbd.pid",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={self.ports['mariadbd']}",
                f"StorageUser={DB_USER}",
                f"StoragePass={password}",
                f"StorageLoc={DB_NAME}",
            ]) + "\n",
        )  # fmt: skip
        self._start_daemon(
            "slurmdbd", ["/usr/sbin/slurmdbd", "-D"], r / "run/slurmdbd.pid",
            r / "log/slurmdbd.log",
        )  # fmt: skip
        # Listening means its tables exist. Watched, not probed: a probe that connects and says
        # nothing is logged by slurmdbd as an error.
        self._wait_for(
            lambda: self._daemon_exited("slurmdbd") or self._listens("slurmdbd"),
            f"slurmdbd to listen on port {self.ports['slurmdbd']}",
            deadline,
        )
        self._raise_if_exited("slurmdbd")

    def _run_install_db(self, argv: list[str]) -> None:
        out_path = self.root / "log" / "mariadb-install-db.out"
        with out_path.open("wb") as out:
            # Its own session: on a timeout the whole group goes, with the bootstrap mariadbd
            # it runs (which would otherwise outlive the script).
            proc = subprocess.Popen(
                argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, cwd=self.root, start_new_session=True,
            )  # fmt: skip
            try:
                code = proc.wait(timeout=INSTALL_DB_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
        if code != 0:
            # Its [ERROR] lines come first, then ~30 lines of generic advice.
            lines = out_path.read_text(errors="replace").splitlines()
            text = [line for line in lines if "ERROR" in line][:20] or lines[-20:]
            raise ClusterError(
                f"mariadb-install-db {'timed out' if code is None else f'exited with {code}'}:\n"
                + "\n".join(text)
            )

    def _daemon(self, name: str) -> _Daemon | None:
        return next((d for d in self.daemons if d.name == name), None)

    def _daemon_exited(self, name: str) -> bool:
        d = self._daemon(name)
        return d is None or d.popen is None or d.popen.poll() is not None

    def _raise_if_exited(self, name: str) -> None:
        d = self._daemon(name)
        if d is not None and d.popen is not None and d.popen.poll() is not None:
            raise ClusterError(f"{name} exited with code {d.popen.returncode}:\n{self.logs()}")

    def _listens(self, name: str) -> bool:
        """Whether the daemon `name` has a listening TCP socket on its port."""
        d = self._daemon(name)
        if d is None or d.popen is None:
            return False
        try:
            conns = psutil.Process(d.popen.pid).net_connections("tcp")
        except psutil.Error:
            return False
        return any(
            c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.ports[name]
            for c in conns
        )

    def _start_daemon(self, name: str, argv: list[str], pid_file: Path, log_file: Path) -> None:
        d = _Daemon(name, pid_file, log_file)
        self.daemons.append(d)
        with (self.root / "log" / f"{name}.out").open("wb") as out:
            d.popen = popen = subprocess.Popen(
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                start_new_session=True,  # a Ctrl-C in the test terminal is not theirs
            )
        # slurmd and slurmctld write their pid file early; wait so stop() can rely on it.
        self._wait_for(
            lambda: pid_file.exists() or popen.poll() is not None,
            f"{name}'s pid file {pid_file}",
            time.monotonic() + 5,
        )
        if popen.poll() is not None:
            raise ClusterError(
                f"{name} exited with code {popen.returncode} at start:\n{self.logs()}\n"
                f"--- {name}.out\n{(self.root / 'log' / f'{name}.out').read_text()}"
            )

    def _wait_for(self, ok: Callable[[], bool], what: str, deadline: float) -> None:
        while not ok():
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.05)

    def _wait_idle(self, deadline: float) -> None:
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            for d in self.daemons:
                if d.popen is not None and d.popen.poll() is not None:
                    raise ClusterError(
                        f"{d.name} exited with code {d.popen.returncode}:\n{self.logs()}"
                    )
            states = self.node_states()
            if all(states.get(n) == "idle" for n in self.nodes):
                return
            time.sleep(0.1)
        raise ClusterError(
            f"nodes not idle after start (sinfo says {states or 'nothing'}):\n{self.logs()}"
        )

    # -- stop -------------------------------------------------------------------------------

    def stop(self) -> list[str]:
        """Cancel jobs, stop every daemon, remove the directory; returns what survived."""
        problems: list[str] = []
        slurmctld_up = any(
            d.name == "slurmctld" and d.popen is not None and d.popen.poll() is None
            for d in self.daemons
        )
        if slurmctld_up:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                jobs = self.job_ids()
                if jobs:
                    self.run(["scancel", "--full", *jobs], timeout_s=5, check=False)
                deadline = time.monotonic() + 5
                while self.job_ids() and time.monotonic() < deadline:
                    time.sleep(0.1)
        for d in sorted(self.daemons, key=_stop_rank):
            problems += _stop_daemon(d)
        problems += kill_stepds(self.root)
        problems += kill_session_daemons(self.root)
        self.daemons = []
        if os.environ.get("NETSTICK_SLURM_KEEP") != "1":
            shutil.rmtree(self.root, ignore_errors=True)
        return problems

    def __enter__(self) -> SlurmCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        problems = self.stop()
        if problems and exc_type is None:
            raise ClusterError("cluster teardown left: " + "; ".join(problems))


# slurmds first (they report to slurmctld), then slurmctld, then the accounting daemons it
# reports to, munged last (every other daemon authenticates through it).
STOP_ORDER = ("slurmd-", "slurmctld", "slurmdbd", "mariadbd", "munged")


def _stop_rank(d: _Daemon) -> int:
    return next((i for i, p in enumerate(STOP_ORDER) if d.name.startswith(p)), 0)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _ended(proc: psutil.Process) -> bool:
    """Gone, or a zombie: it runs nothing any more, whoever reaps it."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _signal_and_wait(pid: int, grace_s: float) -> bool:
    """SIGTERM pid, SIGKILL it after grace_s; True when it has ended.

    A zombie counts as ended: a process that is not our child (a slurmstepd, or a daemon of
    a session whose owner died) is reaped by init, here only every ~2 s, and waiting for that
    made each stop take 2 s.
    """
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if _ended(proc):
                return True
            time.sleep(0.02)
    return _ended(proc)


def _stop_daemon(d: _Daemon) -> list[str]:
    pids = set()
    pid = _read_pid(d.pid_file)
    if pid is not None and psutil.pid_exists(pid):
        pids.add(pid)
    if d.popen is not None and d.popen.poll() is None:
        pids.add(d.popen.pid)
    problems = [f"{d.name} (pid {p}) survived SIGKILL" for p in pids if not _signal_and_wait(
        p, STOP_GRACE_S
    )]  # fmt: skip
    if d.popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            d.popen.wait(timeout=1)  # reap, so no zombie is left either
    return problems


def stepd_pids(root: Path, job_id: str | None = None) -> list[int]:
    """Live slurmstepd processes of the cluster in root (of job_id only, if given).

    A slurmstepd holds a socket in its node's spool directory (which is how it is told apart
    from another cluster's); it double-forks away from slurmd, so stopping slurmd does not
    stop it. Zombies are not counted: they run nothing and only wait for init to reap them.
    """
    spool = str(root / "spool")
    pids = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] != "slurmstepd":
            continue
        # Its title is "slurmstepd: [<job>.<step>]".
        if job_id is not None and f"[{job_id}." not in " ".join(proc.info["cmdline"] or []):
            continue
        with contextlib.suppress(psutil.Error):
            if any(
                c.laddr and str(c.laddr).startswith(spool) for c in proc.net_connections("unix")
            ):
                pids.append(proc.pid)
    return pids


def kill_stepds(root: Path) -> list[str]:
    return [f"slurmstepd {p} survived SIGKILL" for p in stepd_pids(root)
            if not _signal_and_wait(p, 1.0)]  # fmt: skip


def session_daemon_pids(root: Path) -> list[int]:
    """Live daemons (munged, mariadbd, slurmdbd, slurmctld, slurmd) of the cluster in root.

    Found by name and by root in their command line or environment (every one gets SLURM_CONF),
    whether or not a pid file names them: the safety net behind the pid files.
    """
    return [
        proc.pid
        for proc in psutil.process_iter(["name", "status"])
        if proc.info["name"] in DAEMON_NAMES
        and proc.info["status"] != psutil.STATUS_ZOMBIE
        and _environ_has(proc.pid, str(root))
    ]


def kill_session_daemons(root: Path) -> list[str]:
    return [f"daemon {p} of {root} survived SIGKILL" for p in session_daemon_pids(root)
            if not _signal_and_wait(p, STOP_GRACE_S)]  # fmt: skip


def _environ_has(pid: int, text: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().decode(errors="replace")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().decode(errors="replace")
    except OSError:
        return False
    return text in env or text in cmd


def cleanup_stale(parent: Path | None = None) -> list[Path]:
    """Stop and remove clusters of sessions whose owner process is gone; returns their dirs."""
    parent = parent or Path(tempfile.gettempdir())
    removed = []
    for root in parent.glob(f"{DIR_PREFIX}*"):
        owner = _read_pid(root / "owner")
        if owner is not None and psutil.pid_exists(owner):
            continue  # another live session's cluster
        with contextlib.suppress(OSError):
            if owner is None and time.time() - root.stat().st_mtime < 60:
                continue  # just created by a session that has not written its owner file yet
        for pid_file in [*root.glob("run/*.pid"), root / "munge/munged.pid"]:
            pid = _read_pid(pid_file)
            # Only a process that really belongs to that directory: pids are reused.
            if pid is not None and _environ_has(pid, str(root)):
                _signal_and_wait(pid, STOP_GRACE_S)
        kill_stepds(root)
        kill_session_daemons(root)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed
