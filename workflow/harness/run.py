"""The harness: one run of one cell, isolated, monitored, under a network condition.

    sandbox -> server (READY) -> client processes (CONNECTED) -> measurement -> stop -> collect

A run leaves either a complete record in OUT (logs/, monitor CSVs, meta.json, status.json with
status ok) or a failed one kept apart in OUT.failed/<stamp>/ with the reason: it is written to a
temporary directory next to OUT and renamed only when complete, so nothing partial ever sits in
OUT. Every process runs in its own process group and is killed as a group; the sandbox's
namespaces, veths and emulator are removed; the run ends with nothing left behind, whether it
succeeded, failed, or was interrupted by SIGINT or SIGTERM.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitors.sampler import Sampler
from prototypes.contract import lines
from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.processes import (
    Child,
    Interrupted,
    interruptible,
    pick_free_port,
    signal_group,
    signals_deferred,
    spawn,
    tail,
    terminate,
)
from workflow.files import REPO, write_json
from workflow.harness import benchlock, placement, provenance
from workflow.harness import pinning as pins

META_SCHEMA = 1
ISOLATED_PORT = 7777  # inside a run's own namespaces no other process can hold the port
CLIENT_EXIT_SLACK_S = 20.0  # beyond the duration: drain, disconnect, flush
MIN_LOCK_WAIT_S = 1800.0
EXIT_STATUS_WAIT_S = 2.0  # a process whose stdout closed has exited or will within this
GROUP_GONE_S = 5.0  # a killed process group's last zombies are reaped by init within this


class RunFailure(Exception):
    """The run failed for a reason of status.json (not_ready, server_exit, ...)."""

    def __init__(self, reason: str, detail: str, **counts: int) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.counts = counts


@dataclass
class Outcome:
    """What run_cell did: where the record is and whether it counts as data."""

    status: str  # ok | failed
    reason: str | None
    detail: str
    path: Path
    interrupted_by: int | None = None


@dataclass
class _Run:
    """Everything a run started, so cleanup can stop it whatever happened."""

    cell: dict[str, Any]
    tmp: Path
    children: list[Child] = field(default_factory=list)
    sampler: Sampler | None = None
    net: Any = None
    sandbox: Any = None
    phases: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    where: placement.Placement | None = None  # how cleanup must stop the children
    # The machine lock (benchlock): released after cleanup, when nothing of the run is left.
    locks: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    manifest: Any = None  # the prototype's manifest, once loaded
    baseline: dict[str, Any] = field(default_factory=dict)
    host_start: tuple[float, Any] | None = None

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = round(self.phases.get(name, 0.0) + time.monotonic() - t0, 4)


# -- the run ------------------------------------------------------------------------------------


def run_cell(
    cell: dict[str, Any], out: Path, *, repo: Path = REPO, job: dict[str, Any] | None = None
) -> Outcome:
    """Run one validated cell (workflow.harness.cell.validate) into out.

    job: who ran it (host, pid, SLURM job id), kept in meta.json.

    An out that already holds status ok is kept as it is (a resumed campaign never redoes or
    rewrites a finished run).
    """
    out = out.resolve()
    try:
        with benchlock.held(benchlock.run_lock_path(out), f"run {out}", lock_wait_s(cell)):
            return _run_cell(cell, out, repo, job)
    except benchlock.LockTimeout as exc:
        # Another process runs this very run and did not finish in time: nothing was written.
        return Outcome("failed", "run_busy", str(exc), out)


def lock_wait_s(cell: dict[str, Any]) -> float:
    """How long a run waits for a run in flight (benchlock): at least as long as a run of this
    cell may take with every timeout used up, and never under half an hour (the one in flight
    may be a longer cell)."""
    bound_s = (
        cell["ready_timeout_s"]
        + cell["connect_timeout_s"]
        + cell["duration_s"]
        + CLIENT_EXIT_SLACK_S
        + 4 * cell["stop_grace_s"]
        + cell.get("baseline_s", 0)
        + 120  # sandbox, monitors, log check, publishing
    )
    return max(MIN_LOCK_WAIT_S, bound_s)


def _run_cell(cell: dict[str, Any], out: Path, repo: Path, job: dict[str, Any] | None) -> Outcome:
    done = _read_status(out)
    if done is not None and done.get("status") == "ok":
        return Outcome("ok", None, "already complete", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    short = _space_problem(out.parent)
    if short is not None:  # nothing started, nothing written
        return Outcome("failed", "disk_full", short, out)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "logs").mkdir(parents=True)
    run = _Run(cell=cell, tmp=tmp)
    if job is not None:
        run.meta["job"] = job
    t_start = time.time_ns()
    status: dict[str, Any] = {"status": "ok", "reason": None, "detail": "", "counts": {}}
    interrupted: int | None = None
    with interruptible():
        try:
            _execute(run, repo)
        except RunFailure as f:
            status.update(status="failed", reason=f.reason, detail=f.detail, counts=f.counts)
        except Interrupted as i:
            interrupted = i.signum
            status.update(status="failed", reason="interrupted", detail=f"harness got {i}")
        except OSError as exc:
            if not _is_disk_full(exc):
                raise
            status.update(status="failed", reason="disk_full", detail=_disk_full_detail(exc, tmp))
        except Exception as exc:  # a harness bug must still leave a record and no orphans
            detail = "".join(traceback.format_exception(exc)).rstrip()
            status.update(status="failed", reason="internal_error", detail=detail)
        finally:
            _record_exits(run)
            leftovers = _cleanup(run)
            run.locks.close()
        if leftovers and status["status"] == "ok":
            status.update(status="failed", reason="cleanup_error", detail="; ".join(leftovers))
        elif leftovers:
            status["detail"] += "\ncleanup: " + "; ".join(leftovers)
        if status["status"] == "ok":
            # With the manifest: the library versions the processes recorded must be its own.
            violations = [str(v) for v in check_log_dir(tmp / "logs", manifest=run.manifest)]
            if violations:
                status.update(
                    status="failed",
                    reason="log_invalid",
                    detail="\n".join(violations[:50]),
                    counts={"violations": len(violations)},
                )
        status["counts"] = {**run.counts, **status["counts"]}
        status["exit_codes"] = run.exit_codes
        t_end = time.time_ns()
        run.meta.update(
            start_unix_ns=t_start,
            end_unix_ns=t_end,
            phases_s=run.phases,
            # Everything but the measurement window itself: sandbox, start, connect, drain,
            # stop, collect and the log check.
            overhead_s=round((t_end - t_start) / 1e9 - cell["duration_s"], 4),
        )
        if status["status"] != "ok" and status["reason"] != "disk_full":
            # A prototype that could not write its logs (exit 6) on a full disk, a harness write
            # that failed: the cause is the disk, whatever failed first.
            short = _space_problem(out.parent)
            if short is not None:
                status.update(reason="disk_full", detail=f"{short}\n{status['detail']}")
        try:
            write_json(tmp / "meta.json", _meta(run, repo))
            write_json(tmp / "status.json", status)
            final = _publish(tmp, out, ok=status["status"] == "ok")
        except OSError as exc:
            if not _is_disk_full(exc):
                raise
            status.update(status="failed", reason="disk_full", detail=_disk_full_detail(exc, tmp))
            final = _discard_on_full_disk(tmp, out, status)
    return Outcome(status["status"], status["reason"], status["detail"], final, interrupted)


# A run writes logs, monitor samples and metadata: below this much free space a run cannot be
# trusted to finish writing, so none starts (a full disk otherwise burns every attempt).
MIN_FREE_BYTES = 16 * 1024 * 1024


def _space_problem(where: Path) -> str | None:
    """Why a run cannot be written under where (too little free space), or None."""
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None
    if free >= MIN_FREE_BYTES:
        return None
    return (
        f"disk full: {where} has {free // 1024} KiB free; a run needs at least "
        f"{MIN_FREE_BYTES // (1024 * 1024)} MiB (free space, then resume the campaign)"
    )


def _is_disk_full(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _disk_full_detail(exc: OSError, tmp: Path) -> str:
    # A failed write() names no file; the open() that failed does.
    where = exc.filename or f"the run's files in {tmp}"
    return f"disk full: {exc.strerror} writing {where}; {_space_problem(tmp.parent) or ''}".rstrip(
        "; "
    )


def _discard_on_full_disk(tmp: Path, out: Path, status: dict[str, Any]) -> Path:
    """The attempt could not be written completely: remove its partial files (freeing the space
    they took) and keep its status alone as the failed attempt, when even that fits."""
    shutil.rmtree(tmp, ignore_errors=True)
    dest = _attempt_dir(_failed_dir(out))
    try:
        dest.mkdir(parents=True)
        write_json(dest / "status.json", status)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        with contextlib.suppress(OSError):  # only if no earlier attempt is kept there
            dest.parent.rmdir()
        return out
    return dest


def _read_status(out: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((out / "status.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def _publish(tmp: Path, out: Path, ok: bool) -> Path:
    """Rename the finished run into place: ok -> out, failed -> out.failed/<stamp>."""
    if ok:
        if out.exists():  # a partial or failed leftover: keep it apart, never mix
            _set_aside(out)
        os.rename(tmp, out)
        return out
    failed = _failed_dir(out)
    failed.mkdir(exist_ok=True)
    dest = _attempt_dir(failed)
    os.rename(tmp, dest)
    return dest


def _attempt_dir(failed: Path) -> Path:
    """A new name for a failed attempt: the time and pid, plus a count when one process keeps
    two attempts within a second."""
    base = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    dest, n = failed / base, 1
    while dest.exists():
        n += 1
        dest = failed / f"{base}-{n}"
    return dest


def _failed_dir(out: Path) -> Path:
    # The layout's name for failed attempts (workflow.campaign.layout reads it).
    return out.parent / f"{out.name}.failed"


def _set_aside(out: Path) -> None:
    failed = _failed_dir(out)
    failed.mkdir(exist_ok=True)
    os.rename(out, failed / f"{time.strftime('%Y%m%dT%H%M%S')}-stale")


# -- phases ---------------------------------------------------------------------------------------


def _execute(run: _Run, repo: Path) -> None:
    from prototypes.contract import manifest as manifests
    from workflow.harness import netprofiles as profiles
    from workflow.harness import sandbox

    cell = run.cell
    proto_path = Path(cell["prototype"])
    if not proto_path.is_absolute():
        proto_path = repo / proto_path
    man = manifests.load(proto_path)
    # Another library version runs its own build of the same source (cached: a no-op when the
    # workflow built it before the runs); pinned runs the manifest's executable.
    man = man.for_version(cell["transport"], str(cell.get("library_version", manifests.PINNED)))
    if man.library_build is not None:
        manifests.build_version(man.library_build)
    run.manifest = man
    profile_name, profile = profiles.resolve(cell["network_profile"])
    needs_emu = profiles.needs_emulator(profile)
    # Node-side monitors (monitors.wrap) write their CSVs straight into the run's record.
    where = run.where = placement.decide(cell["placement"], monitor_dir=str(run.tmp))
    isolated = _decide_isolation(cell["isolation"], where, needs_emu, sandbox)
    if where.kind == "local":
        # One measurement at a time on this machine, whoever started it (benchlock).
        try:
            waited_s = run.locks.enter_context(
                benchlock.held(
                    benchlock.machine_lock_path(),
                    f"run {cell['cell_id']}/{cell.get('run_id', '')}",
                    lock_wait_s(cell),
                )
            )
        except benchlock.LockTimeout as exc:
            raise RunFailure("machine_busy", str(exc)) from None
        run.meta["machine_lock_wait_s"] = round(waited_s, 3)
    try:
        pinning = pins.check(cell.get("cpu_pinning"), where.kind)
    except pins.PinningError as exc:
        raise RunFailure("pinning_error", str(exc)) from None
    run.meta.update(
        isolation="netns" if isolated else "none",
        placement=where.describe(),
        network_profile={"name": profile_name, "spec": profile},
        manifest=str(
            proto_path.relative_to(repo) if proto_path.is_relative_to(repo) else proto_path
        ),
    )

    logs = run.tmp / "logs"
    with run.phase("sandbox"):
        if isolated:
            sandbox.cleanup_stale()  # namespaces of runs whose harness died (owner gone)
            # The kernel's netem where it exists (and the profile does not ask for the
            # emulator itself), else the user-space emulator in a middle namespace.
            use_netem = (
                needs_emu and not profile.get("force_emulator") and sandbox.kernel_has_netem()
            )
            run.meta["impairment"] = "netem" if use_netem else "netemu" if needs_emu else "none"
            box = sandbox.Sandbox(
                f"{cell['cell_id']}/{cell['run_id']}", emulator=needs_emu and not use_netem
            )
            try:
                box.open()
            except sandbox.SandboxError as exc:
                # A failure to set up the network, not a harness bug: no traceback.
                raise RunFailure("sandbox_error", str(exc)) from None
            run.sandbox = box
            if use_netem:
                sb = run.sandbox
                commands = profiles.netem_commands(profile, sb.client_iface, sb.server_iface)
                for cmd in commands:
                    role = "client" if sb.client_iface in cmd else "server"
                    subprocess.run([*sb.prefix(role), *cmd], check=True, capture_output=True)
                run.meta["netem_commands"] = commands
            elif needs_emu:
                run.meta["emulator_command"] = run.sandbox.start_emulator(
                    profile,
                    repo / "workflow/harness/netemu/bin/netemu",
                    run.tmp / "emulator.json",
                    seed=cell["seed"],
                )
            host_bind, host_connect = run.sandbox.server_addr, run.sandbox.server_addr
            port = cell.get("port", ISOLATED_PORT)
            run.meta["net_start"] = _sandbox_counters(run)
        else:
            _measure_idle_baseline(run)
            host_bind, host_connect = where.server_bind_host(), where.server_connect_host()
            default_port = pick_free_port("127.0.0.1") if where.kind == "local" else ISOLATED_PORT
            port = cell.get("port", default_port)
    if "emulator" in pinning:
        try:
            pins.pin_emulator(run.meta, run.sandbox, pinning["emulator"])
        except pins.PinningError as exc:
            raise RunFailure("pinning_error", str(exc)) from None
    server_argv = manifests.server_argv(man, cell, host=host_bind, port=port, log_dir=logs)
    client_argvs = manifests.client_argvs(man, cell, host=host_connect, port=port, log_dir=logs)
    run.meta["commands"] = {"server": server_argv, "clients": client_argvs}
    # Hashed before anything starts: the files that run, not what the checkout holds later.
    run.meta["prototypes"] = [provenance.prototype_record(man, repo, server_argv)]
    run.counts["client_processes"] = len(client_argvs)
    run.counts["players_expected"] = cell["players"]

    with run.phase("server_ready"):
        env = manifests.process_env(man, os.environ)
        with signals_deferred():  # a stop between the two would orphan the server
            server = spawn(
                "server",
                _prefixed(run, where, "server", 0, "server") + server_argv,
                run.tmp,
                env=env,
                cpus=pinning.get("server"),
            )
            run.children.append(server)
        pins.record(run.meta, server, pinning.get("server"))
        if _wait_ready(server, cell["ready_timeout_s"]) is None:
            code = server.popen.poll()
            if code is None:
                code = _remote_exit_code(server)
            if code is None:
                raise RunFailure(
                    "not_ready",
                    f"no '{lines.READY_PREFIX}' line within {cell['ready_timeout_s']:g} s; server "
                    f"stderr:\n{tail(server.stderr_path)}",
                )
            run.exit_codes["server"] = code
            raise RunFailure(
                "server_exit",
                f"server exited with code {code} before READY; stderr:\n{tail(server.stderr_path)}",
            )

    pids = {"server": server.popen.pid}
    with run.phase("clients_connected"):
        clients: list[Child] = []
        for k, argv in enumerate(client_argvs):
            name = f"client-{_first_player(argv)}"
            prefix = _prefixed(run, where, "client", k, name)
            with signals_deferred():
                child = spawn(name, prefix + argv, run.tmp, env=env, cpus=pinning.get("clients"))
                run.children.append(child)
            pins.record(run.meta, child, pinning.get("clients"))
            clients.append(child)
            pids[name] = child.popen.pid
        run.sampler = Sampler(pids, run.tmp / "monitor.csv", cell["sample_interval_s"]).start()
        run.net = _start_net_monitor(run, isolated, server.popen.pid)
        connected_ns = _await_connected(run, clients, cell)
    run.meta["window_start_unix_ns"] = connected_ns

    with run.phase("measurement"):
        deadline = time.monotonic() + cell["duration_s"] + CLIENT_EXIT_SLACK_S
        for child in clients:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                code = child.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                raise RunFailure(
                    "timeout",
                    f"{child.name} still running {CLIENT_EXIT_SLACK_S:g} s after the "
                    f"{cell['duration_s']:g} s window",
                ) from None
            run.exit_codes[child.name] = code
            if code != 0:
                server_code = server.popen.poll()
                if server_code is not None:
                    # The server died first (a crash, the OOM killer): its exit is the cause, the
                    # client's "server lost" only the consequence.
                    run.exit_codes["server"] = server_code
                    raise RunFailure(
                        "server_exit",
                        f"server exited with code {describe_exit(server_code)} during the run; "
                        f"{child.name} then exited with code {code}"
                        f"{' (server lost)' if code == 5 else ''}; server "
                        f"stderr:\n{tail(server.stderr_path)}",
                    )
                raise RunFailure(
                    "client_exit",
                    f"{child.name} exited with code {describe_exit(code)}"
                    f"{' (server lost)' if code == 5 else ''}; stderr:\n{tail(child.stderr_path)}",
                )
    run.meta["window_end_unix_ns"] = time.time_ns()

    with run.phase("stop"):
        if server.popen.poll() is not None:
            run.exit_codes["server"] = server.popen.returncode
            raise RunFailure(
                "server_exit",
                f"server exited with code {describe_exit(server.popen.returncode)} during the run; "
                f"stderr:\n{tail(server.stderr_path)}",
            )
        code = _stop(server, where, cell["stop_grace_s"])
        run.exit_codes["server"] = code
        if code != 0:
            raise RunFailure(
                "server_exit",
                f"server exited with code {code} after SIGTERM; "
                f"stderr:\n{tail(server.stderr_path)}",
            )


SRUN_TASK_EXIT = re.compile(r"srun: error: \S+: task \d+: Exited with exit code (\d+)")


def _remote_exit_code(child: Child) -> int | None:
    """The exit code srun reported for the remote task, while srun itself still runs."""
    try:
        m = SRUN_TASK_EXIT.search(child.stderr_path.read_text(errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _wait_ready(server: Child, timeout_s: float) -> tuple[int, str] | None:
    """Wait for READY, giving up early when the server (or its remote srun task) exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        wait_s = min(0.2, max(0.0, deadline - time.monotonic()))
        got = server.watcher.wait_for(lines.READY_PREFIX, wait_s)
        if got is not None:
            return got
        if server.popen.poll() is not None or _remote_exit_code(server) is not None:
            return None
        if time.monotonic() >= deadline:
            return None


def _decide_isolation(
    requested: str, where: placement.Placement, needs_emu: bool, sandbox: Any
) -> bool:
    if where.kind == "slurm":
        if requested == "netns":
            raise RunFailure("sandbox_error", "isolation netns is not available across SLURM nodes")
        if needs_emu:
            raise RunFailure(
                "sandbox_error",
                "network profiles with impairments need isolation netns (one machine)",
            )
        return False
    ok, why = sandbox.isolation_available()
    if requested == "netns" and not ok:
        raise RunFailure("sandbox_error", f"isolation netns requested but unavailable: {why}")
    if needs_emu and not ok:
        raise RunFailure(
            "sandbox_error",
            f"the network profile needs the emulator, which needs network namespaces: {why}",
        )
    return ok and requested in ("auto", "netns")


def _prefixed(run: _Run, where: placement.Placement, role: str, index: int, name: str) -> list[str]:
    prefix = (
        list(run.sandbox.prefix(role))
        if run.sandbox is not None
        else where.prefix(role, index, name)
    )
    # Recorded per process: with SLURM placement the srun prefix names the node it ran on.
    run.meta.setdefault("launch_prefixes", {})[name] = prefix
    return prefix


def _stop(child: Child, where: placement.Placement | None, grace_s: float) -> int:
    """Stop child: as terminate does, or for an srun step SIGINT, SIGTERM, then SIGKILL.

    srun forwards SIGINT to its task (graceful stop); it answers SIGTERM by SIGKILLing its
    task. Only srun itself is signalled, never its group: srun's helper process cancels the
    step if srun dies (SIGKILL) with the step still running, so it must outlive srun.
    """
    if where is None or where.kind != "slurm":
        return terminate(child, grace_s)
    for sig in (where.stop_signal, signal.SIGTERM, signal.SIGKILL):
        if child.popen.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.popen.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=grace_s)
    return child.popen.wait()


def describe_exit(code: int) -> str:
    """An exit code as a user reads it: -9 is "-9 (killed by SIGKILL)"."""
    if code < 0:
        try:
            return f"{code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            return str(code)
    return str(code)


def _record_exits(run: _Run) -> None:
    """The exit codes of processes that ended on their own before cleanup stops the rest: a
    process that died mid-run leaves its trace even when another one's failure ended the run."""
    for child in run.children:
        code = child.popen.poll()
        if code is not None and child.name not in run.exit_codes:
            run.exit_codes[child.name] = code


def _first_player(argv: list[str]) -> str:
    for flag, value in itertools.pairwise(argv):
        if flag == "-first-player":
            return value
    return "0"


def _await_connected(run: _Run, clients: list[Child], cell: dict[str, Any]) -> int:
    """Wait for every client's CONNECTED line; the time the last one arrived."""
    deadline = time.monotonic() + cell["connect_timeout_s"]
    last_ns = 0
    connected = 0
    for child in clients:
        got = child.watcher.wait_for(lines.CONNECTED_PREFIX, max(0.0, deadline - time.monotonic()))
        if got is None:
            code = child.popen.poll()
            if code is None and child.watcher.at_eof:
                # Its stdout closed before the line: the client is exiting, and its exit status
                # follows within moments (poll() alone races the reaping and misnamed such runs
                # players_missing).
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = child.popen.wait(timeout=EXIT_STATUS_WAIT_S)
            run.counts["players_connected"] = connected
            if code is not None:
                run.exit_codes[child.name] = code
                raise RunFailure(
                    "client_exit",
                    f"{child.name} exited with code {code} before all its players connected"
                    f"{' (connect failure)' if code == 4 else ''}; "
                    f"stderr:\n{tail(child.stderr_path)}",
                    players_connected=connected,
                    players_expected=cell["players"],
                )
            raise RunFailure(
                "players_missing",
                f"{child.name} did not report all its players connected within "
                f"{cell['connect_timeout_s']:g} s: {connected} of {cell['players']} connected",
                players_connected=connected,
                players_expected=cell["players"],
            )
        t_ns, line = got
        connected += int(lines.fields(line).get("players", "0"))
        last_ns = max(last_ns, t_ns)
    run.counts["players_connected"] = connected
    if connected != cell["players"]:
        raise RunFailure(
            "players_missing",
            f"{connected} of {cell['players']} players connected",
            players_connected=connected,
            players_expected=cell["players"],
        )
    return last_ns


def _start_net_monitor(run: _Run, isolated: bool, server_pid: int) -> Any:
    from monitors import netcounters

    cell = run.cell
    if isolated:
        return netcounters.NetSampler(
            run.tmp / "net.csv",
            interval_s=cell["sample_interval_s"],
            pid=server_pid,
            ifaces=[run.sandbox.server_iface],
        ).start()
    # Shared interfaces: record every NIC of this machine; the idle baseline measured before
    # the run is subtracted at the end (approximate, and flagged when within noise).
    return netcounters.NetSampler(run.tmp / "net.csv", interval_s=cell["sample_interval_s"]).start()


def _measure_idle_baseline(run: _Run) -> None:
    """Without isolation: idle traffic of every NIC before the run, and the starting counters."""
    from monitors import netcounters

    seconds = run.cell.get("baseline_s", 0)
    if seconds > 0:
        run.baseline = netcounters.measure_baseline(seconds, min(0.25, seconds))
        run.meta["idle_baseline"] = {k: _as_dict(v) for k, v in run.baseline.items()}
    run.host_start = (time.monotonic(), netcounters.read_counters())


def _host_traffic(run: _Run) -> None:
    """Without isolation: each NIC's traffic during the run, minus the idle baseline."""
    from monitors import netcounters

    if run.host_start is None:
        return
    t0, start = run.host_start
    end = netcounters.read_counters()
    duration_s = time.monotonic() - t0
    deltas = {iface: end[iface] - start[iface] for iface in end if iface in start}
    run.meta["net_totals_raw"] = {k: _as_dict(v) for k, v in deltas.items()}
    if run.baseline:
        rows = netcounters.subtract_baselines(deltas, run.baseline, duration_s)
        run.meta["net_totals_corrected"] = [_as_dict(r) for r in rows]


# -- cleanup ------------------------------------------------------------------------------------


def _cleanup(run: _Run) -> list[str]:
    """Stop everything the run started; returns what could not be removed."""
    problems: list[str] = []
    srun = run.where is not None and run.where.kind == "slurm"
    for child in run.children:
        if child.popen.poll() is None:
            name = child.name
            code = _stop(child, run.where, run.cell.get("stop_grace_s", 3.0))
            run.exit_codes.setdefault(name, code)
        if srun:
            # srun's helper process (same group) cancels the step through slurmctld when srun
            # died before its step ended; killing it too would leave the step on its node.
            _group_alive(child.popen.pid, GROUP_GONE_S)
        signal_group(child, signal.SIGKILL)  # helpers the leader left behind
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.popen.wait(timeout=5)
        child.watcher.join()
        if _group_alive(child.popen.pid, GROUP_GONE_S):
            problems.append(f"process group {child.popen.pid} ({child.name}) still has members")
    if run.sampler is not None:
        try:
            cost = run.sampler.stop()
            run.meta["monitor"] = {
                "interval_s": run.cell.get("sample_interval_s"),
                "sampler_cpu_s": cost.thread_cpu_s,
                "sampler_wall_s": cost.wall_s,
            }
        except (RuntimeError, OSError) as exc:  # a full disk fails its last write
            problems.append(f"sampler: {exc}")
    if run.net is not None:
        with contextlib.suppress(Exception):
            run.net.stop()
    with contextlib.suppress(Exception):  # evidence only: never a reason to lose the run
        _host_traffic(run)
    if run.sandbox is not None:
        start = run.meta.pop("net_start", None)
        end = _sandbox_counters(run) if start is not None else None
        if start is not None and end is not None:
            # Whole-run traffic on each side's veth: every frame of the run, exactly.
            run.meta["net_totals"] = {
                side: {k: end[side][k] - start[side][k] for k in end[side]} for side in end
            }
        try:
            run.sandbox.__exit__(None, None, None)
        except Exception as exc:
            problems.append(f"sandbox: {exc}")
        emu = run.tmp / "emulator.json"
        if emu.exists():
            with contextlib.suppress(json.JSONDecodeError):
                run.meta["emulator"] = json.loads(emu.read_text())
    return problems


def _sandbox_counters(run: _Run) -> dict[str, dict[str, int]] | None:
    """Counters of the server's and the players' veth, read inside their namespaces."""
    from monitors import netcounters

    sb = run.sandbox
    try:
        server = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        client = netcounters.read_counters(None, sb.client_ns)[sb.client_iface]
    except Exception:  # counters are evidence, not a reason to lose the run
        return None
    return {"server": _as_dict(server), "client": _as_dict(client)}


def _as_dict(obj: Any) -> dict[str, Any]:
    """A dataclass (counters, baselines, corrected rows) as a JSON-ready dict."""
    if isinstance(obj, dict):
        return dict(obj)
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _group_alive(pgid: int, wait_s: float = 0.0) -> bool:
    """Whether the process group still has members after waiting up to wait_s for it to empty.

    A member that outlives the leader (srun's helper, which exits on its own once srun is
    gone) is re-parented to init and stays in the group, as a zombie, until init reaps it:
    about a second here.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)


# -- metadata -----------------------------------------------------------------------------------


def _meta(run: _Run, repo: Path) -> dict[str, Any]:
    cell = run.cell
    started = run.meta.pop("prototypes", [])  # kept under versions, with what the logs report
    return {
        "schema": META_SCHEMA,
        "campaign": cell.get("campaign"),
        "cell_id": cell.get("cell_id"),
        "run_id": cell.get("run_id"),
        "seed": cell.get("seed"),
        "cell": cell,
        "versions": provenance.collect_run(repo, started, run.tmp / "logs"),
        **run.meta,
    }
