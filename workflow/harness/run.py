"""The harness: one run of one cell, isolated, monitored, under a network condition.

    sandbox -> server (READY) -> client processes (CONNECTED) -> measurement -> stop -> collect

A run leaves either a complete record in OUT (logs/, monitor CSVs, meta.json, status.json with
status ok) or a failed one kept apart in OUT.failed/<stamp>/ with the reason: it is written to a
temporary directory next to OUT and renamed only when complete, so nothing partial ever sits in
OUT (workflow.harness.rundir). Every process runs in its own process group and is killed as a
group; the sandbox's namespaces, veths and emulator are removed (workflow.harness.stop); the run
ends with nothing left behind, whether it succeeded, failed, or was interrupted by SIGINT or
SIGTERM.

This module holds the run's phases in their order; state holds what a run carries through them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitors.sampler import MONITOR_CSV, Sampler
from prototypes.contract import argv as argvs
from prototypes.contract import lines
from prototypes.contract import manifest as manifests
from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.processes import (
    Child,
    Interrupted,
    interruptible,
    pick_free_port,
    signals_deferred,
    spawn,
    tail,
)
from workflow.files import REPO, write_json
from workflow.harness import (
    benchlock,
    placement,
    profiler,
    rundir,
    sandbox,
    traffic,
    userns,
    window_data,
)
from workflow.harness import netprofiles as profiles
from workflow.harness import pinning as pins
from workflow.harness.builds import build_version
from workflow.harness.prototype_record import collect_run, prototype_record
from workflow.harness.state import (
    CLIENT_EXIT_SLACK_S,
    EXIT_STATUS_WAIT_S,
    MIN_LOCK_WAIT_S,
    Outcome,
    Run,
    RunFailure,
)
from workflow.harness.stop import cleanup, describe_exit, record_exits, remote_exit_code, stop

META_SCHEMA = 1
ISOLATED_PORT = 7777  # inside a run's own namespaces no other process can hold the port


@dataclass(frozen=True)
class _Plan:
    """What the run decided before it started anything."""

    manifest: manifests.Manifest
    profile: dict[str, Any]
    needs_emu: bool
    isolated: bool
    pinning: dict[str, list[int]]
    where: placement.Placement


@dataclass(frozen=True)
class _Address:
    """Where the server listens (bind) and where the clients reach it (connect)."""

    bind: str
    connect: str
    port: int


@dataclass(frozen=True)
class _Commands:
    server: list[str]
    clients: list[list[str]]
    env: dict[str, str]
    server_env: dict[str, str]  # env, and what a profiler needs (workflow.harness.profiler)


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
    if _isolate_in_userns(cell):
        return userns.run_cell_inside(cell, out, job)
    try:
        with benchlock.held(benchlock.run_lock_path(out), f"run {out}", lock_wait_s(cell)):
            return _run_cell(cell, out, repo, job)
    except benchlock.LockTimeout as exc:
        # Another process runs this very run and did not finish in time: nothing was written.
        return Outcome("failed", "run_busy", str(exc), out)


def _isolate_in_userns(cell: dict[str, Any]) -> bool:
    """Whether this run, wanting its own namespaces, is started by a user who is not root on a
    machine that allows user namespaces (workflow/harness/userns.py): then a child runs it as
    root of a user namespace of its own."""
    if os.geteuid() == 0 or userns.inside() or cell.get("isolation") == "none":
        return False
    try:
        local = _place(cell).kind == "local"
    except (placement.PlacementError, profiles.ProfileError):
        return False  # the run itself says why
    return local and userns.available()[0]


def _place(cell: dict[str, Any], monitor_dir: str | None = None) -> placement.Placement:
    """Where the run goes: a profile the emulator applies keeps placement auto on one node."""
    profile_name, profile = profiles.resolve(cell["network_profile"])
    one_node_for = (
        f"the network profile {profile_name} is applied by the emulator between the server "
        "and its players, which cannot sit between two nodes"
        if profiles.needs_emulator(profile)
        else None
    )
    return placement.decide(
        cell.get("placement", "auto"), monitor_dir=monitor_dir, one_node_for=one_node_for
    )


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
    if out.parent.is_dir():  # a killed earlier writer's work directory: kept, out of the way
        rundir.set_aside_dead_work_dirs(out)
    if rundir.finished(out):
        return Outcome("ok", None, "already complete", out)
    out.parent.mkdir(parents=True, exist_ok=True)
    short = rundir.space_problem(out.parent)
    if short is not None:  # nothing started, nothing written
        return Outcome("failed", "disk_full", short, out)
    run = Run(cell=cell, tmp=rundir.open_work_dir(out))
    if job is not None:
        run.meta["job"] = job
    t_start = time.time_ns()
    with interruptible():
        status, interrupted = _attempt(run, repo)
        _conclude(run, status, out, t_start)
        final = _write(run, status, out, repo)
    return Outcome(status["status"], status["reason"], status["detail"], final, interrupted)


def _attempt(run: Run, repo: Path) -> tuple[dict[str, Any], int | None]:
    """Execute the run and stop all it started, whatever happened: its status (the reason of a
    failure) and the signal that interrupted it, if one did."""
    status: dict[str, Any] = {"status": "ok", "reason": None, "detail": "", "counts": {}}
    interrupted: int | None = None
    try:
        _execute(run, repo)
    except RunFailure as f:
        status.update(status="failed", reason=f.reason, detail=f.detail, counts=f.counts)
    except Interrupted as i:
        interrupted = i.signum
        status.update(status="failed", reason="interrupted", detail=f"harness got {i}")
    except OSError as exc:
        if not rundir.is_disk_full(exc):
            raise
        status.update(
            status="failed", reason="disk_full", detail=rundir.disk_full_detail(exc, run.tmp)
        )
    except Exception as exc:  # a harness bug must still leave a record and no orphans
        detail = "".join(traceback.format_exception(exc)).rstrip()
        status.update(status="failed", reason="internal_error", detail=detail)
    finally:
        record_exits(run)
        leftovers = cleanup(run)
        run.locks.close()
    if leftovers and status["status"] == "ok":
        status.update(status="failed", reason="cleanup_error", detail="; ".join(leftovers))
    elif leftovers:
        status["detail"] += "\ncleanup: " + "; ".join(leftovers)
    return status, interrupted


def _window_empty(run: Run) -> str | None:
    start, end = run.meta.get("window_start_unix_ns"), run.meta.get("window_end_unix_ns")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    return window_data.problem(run.cell, run.tmp, (start, end))


def _conclude(run: Run, status: dict[str, Any], out: Path, t_start: int) -> None:
    """Complete status and meta once everything stopped: the log check, the counts and exit
    codes, the run's times, and a full disk named as the cause of a failure."""
    if status["status"] == "ok":
        # With the manifest: the library versions the processes recorded must be its own.
        violations = [str(v) for v in check_log_dir(run.tmp / "logs", manifest=run.manifest)]
        if violations:
            status.update(
                status="failed",
                reason="log_invalid",
                detail="\n".join(violations[:50]),
                counts={"violations": len(violations)},
            )
        elif (empty := _window_empty(run)) is not None:
            status.update(status="failed", reason="no_data", detail=empty)
    status["counts"] = {**run.counts, **status["counts"]}
    status["exit_codes"] = run.exit_codes
    t_end = time.time_ns()
    run.meta.update(
        start_unix_ns=t_start,
        end_unix_ns=t_end,
        phases_s=run.phases,
        # Everything but the measurement window itself: sandbox, start, connect, drain,
        # stop, collect and the log check.
        overhead_s=round((t_end - t_start) / 1e9 - run.cell["duration_s"], 4),
    )
    if status["status"] != "ok" and status["reason"] != "disk_full":
        # A prototype that could not write its logs (exit 6) on a full disk, a harness write
        # that failed: the cause is the disk, whatever failed first.
        short = rundir.space_problem(out.parent)
        if short is not None:
            status.update(reason="disk_full", detail=f"{short}\n{status['detail']}")


def _write(run: Run, status: dict[str, Any], out: Path, repo: Path) -> Path:
    """Write meta.json and status.json and publish the run; where its record ended up."""
    try:
        write_json(run.tmp / "meta.json", _meta(run, repo))
        write_json(run.tmp / "status.json", status)
        return rundir.publish(run.tmp, out, ok=status["status"] == "ok")
    except OSError as exc:
        if not rundir.is_disk_full(exc):
            raise
        detail = rundir.disk_full_detail(exc, run.tmp)
        status.update(status="failed", reason="disk_full", detail=detail)
        return rundir.discard_on_full_disk(run.tmp, out, status)


# -- phases ---------------------------------------------------------------------------------------


def _execute(run: Run, repo: Path) -> None:
    plan = _prepare(run, repo)
    address = _open_sandbox(run, plan, repo)
    commands = _commands(run, plan, repo, address)
    server = _start_server(run, plan, commands)
    clients = _start_clients(run, plan, commands, server)
    _measure(run, server, clients)
    _stop_server(run, server)


def _prepare(run: Run, repo: Path) -> _Plan:
    """Load the manifest (building another library version), resolve the network profile,
    placement, isolation and pinning, and take the machine; nothing is started yet."""
    cell = run.cell
    proto_path = Path(cell["prototype"])
    if not proto_path.is_absolute():
        proto_path = repo / proto_path
    man = manifests.load(proto_path)
    # Another library version runs its own build of the same source (cached: a no-op when the
    # workflow built it before the runs); pinned runs the manifest's executable.
    man = man.for_version(cell["transport"], str(cell.get("library_version", manifests.PINNED)))
    if man.library_build is not None:
        build_version(man.library_build)
    run.manifest = man
    profile_name, profile = profiles.resolve(cell["network_profile"])
    needs_emu = profiles.needs_emulator(profile)
    # Node-side monitors (monitors.wrap) write their CSVs straight into the run's record.
    where = run.where = _place(cell, monitor_dir=str(run.tmp))
    isolated = _decide_isolation(cell["isolation"], where, needs_emu)
    profiler.check(run, where)
    if where.kind == "local":
        _hold_machine(run)
    try:
        pinning = pins.check(cell.get("cpu_pinning"), where.kind)
    except pins.PinningError as exc:
        raise RunFailure("pinning_error", str(exc)) from None
    run.meta.update(
        isolation=("userns" if userns.inside() else "netns") if isolated else "none",
        placement=where.describe(),
        network_profile={"name": profile_name, "spec": profile},
        manifest=str(
            proto_path.relative_to(repo) if proto_path.is_relative_to(repo) else proto_path
        ),
    )
    return _Plan(man, profile, needs_emu, isolated, pinning, where)


def _hold_machine(run: Run) -> None:
    """One measurement at a time on this machine, whoever started it (benchlock)."""
    cell = run.cell
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


def _decide_isolation(requested: str, where: placement.Placement, needs_emu: bool) -> bool:
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


def _open_sandbox(run: Run, plan: _Plan, repo: Path) -> _Address:
    """The run's own namespaces (impaired as the profile asks), or the shared host after its
    idle traffic is measured; where the server will listen."""
    cell = run.cell
    with run.phase("sandbox"):
        if plan.isolated:
            _isolate(run, plan, repo)
            host = run.sandbox.server_addr
            address = _Address(host, host, cell.get("port", ISOLATED_PORT))
            run.meta["net_start"] = traffic.sandbox_counters(run)
        else:
            traffic.measure_idle_baseline(run)
            where = plan.where
            default_port = pick_free_port("127.0.0.1") if where.kind == "local" else ISOLATED_PORT
            port = cell.get("port", default_port)
            address = _Address(where.server_bind_host(), where.server_connect_host(), port)
    if "emulator" in plan.pinning:
        try:
            pins.pin_emulator(run.meta, run.sandbox, plan.pinning["emulator"])
        except pins.PinningError as exc:
            raise RunFailure("pinning_error", str(exc)) from None
    return address


def _isolate(run: Run, plan: _Plan, repo: Path) -> None:
    cell, profile, needs_emu = run.cell, plan.profile, plan.needs_emu
    sandbox.cleanup_stale()  # namespaces of runs whose harness died (owner gone)
    # The kernel's netem where it exists (and the profile does not ask for the emulator
    # itself), else the user-space emulator in a middle namespace.
    use_netem = needs_emu and not profile.get("force_emulator") and sandbox.kernel_has_netem()
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
        commands = profiles.netem_commands(profile, box.client_iface, box.server_iface)
        for cmd in commands:
            role = "client" if box.client_iface in cmd else "server"
            subprocess.run([*box.prefix(role), *cmd], check=True, capture_output=True)
        run.meta["netem_commands"] = commands
    elif needs_emu:
        run.meta["emulator_command"] = box.start_emulator(
            profile,
            repo / "workflow/harness/netemu/bin/netemu",
            run.tmp / "emulator.json",
            seed=cell["seed"],
        )


def _commands(run: Run, plan: _Plan, repo: Path, address: _Address) -> _Commands:
    """The processes' command lines and environment, recorded (with what they run) before any
    of them starts."""
    man, cell, logs = plan.manifest, run.cell, run.tmp / "logs"
    server_argv = argvs.server_argv(man, cell, host=address.bind, port=address.port, log_dir=logs)
    client_argvs = argvs.client_argvs(
        man, cell, host=address.connect, port=address.port, log_dir=logs
    )
    run.meta["commands"] = {"server": server_argv, "clients": client_argvs}
    # Hashed before anything starts: the files that run, not what the checkout holds later.
    run.meta["prototypes"] = [prototype_record(man, repo, server_argv)]
    run.counts["client_processes"] = len(client_argvs)
    run.counts["players_expected"] = cell["players"]
    env = argvs.process_env(man, os.environ)
    return _Commands(server_argv, client_argvs, env, profiler.environment(run, env))


def _start_server(run: Run, plan: _Plan, commands: _Commands) -> Child:
    """Start the server and wait for its READY line."""
    cell, cpus = run.cell, plan.pinning.get("server")
    with run.phase("server_ready"):
        with signals_deferred():  # a stop between the two would orphan the server
            server = spawn(
                "server",
                _prefixed(run, plan.where, "server", 0, "server")
                + profiler.prefix(run)
                + commands.server,
                run.tmp,
                env=commands.server_env,
                cpus=cpus,
            )
            run.children.append(server)
        pins.record(run.meta, server, cpus)
        if _wait_ready(server, cell["ready_timeout_s"]) is None:
            code = server.popen.poll()
            if code is None:
                code = remote_exit_code(server)
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
    return server


def _start_clients(run: Run, plan: _Plan, commands: _Commands, server: Child) -> list[Child]:
    """Start the client processes and the monitors, and wait until every player connected:
    the measurement window opens then."""
    cpus = plan.pinning.get("clients")
    pids = {"server": server.popen.pid}
    with run.phase("clients_connected"):
        clients: list[Child] = []
        for k, argv in enumerate(commands.clients):
            name = f"client-{_first_player(argv)}"
            prefix = _prefixed(run, plan.where, "client", k, name)
            with signals_deferred():
                child = spawn(name, prefix + argv, run.tmp, env=commands.env, cpus=cpus)
                run.children.append(child)
            pins.record(run.meta, child, cpus)
            clients.append(child)
            pids[name] = child.popen.pid
        emulator = getattr(run.sandbox, "emulator_process", None)
        if emulator is not None:
            # netemu carries the run's own packets: sampled as the run's, so its load is never
            # taken for a neighbour's (stats.interference).
            pids["emulator"] = emulator.pid
        run.sampler = Sampler(pids, run.tmp / MONITOR_CSV, run.cell["sample_interval_s"]).start()
        run.net = traffic.start_net_monitor(run, plan.isolated, server.popen.pid)
        connected_ns = _await_connected(run, clients, run.cell)
        profiler.switch(run, server, on=True)
    run.meta["window_start_unix_ns"] = connected_ns
    return clients


def _measure(run: Run, server: Child, clients: list[Child]) -> None:
    """The measurement window: every client runs its duration and exits 0."""
    cell = run.cell
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
                raise _client_failure(run, server, child, code)
    run.meta["window_end_unix_ns"] = time.time_ns()
    profiler.switch(run, server, on=False)


def _client_failure(run: Run, server: Child, child: Child, code: int) -> RunFailure:
    """Why a client exiting with code failed the run: its own exit, or the server's before it."""
    lost = " (server lost)" if code == 5 else ""
    server_code = server.popen.poll()
    if server_code is not None:
        # The server died first (a crash, the OOM killer): its exit is the cause, the client's
        # "server lost" only the consequence.
        run.exit_codes["server"] = server_code
        return RunFailure(
            "server_exit",
            f"server exited with code {describe_exit(server_code)} during the run; "
            f"{child.name} then exited with code {code}{lost}; server "
            f"stderr:\n{tail(server.stderr_path)}",
        )
    return RunFailure(
        "client_exit",
        f"{child.name} exited with code {describe_exit(code)}{lost}; "
        f"stderr:\n{tail(child.stderr_path)}",
    )


def _stop_server(run: Run, server: Child) -> None:
    """Stop the server gracefully; it must still run, and exit 0."""
    with run.phase("stop"):
        if server.popen.poll() is not None:
            run.exit_codes["server"] = server.popen.returncode
            raise RunFailure(
                "server_exit",
                f"server exited with code {describe_exit(server.popen.returncode)} during the run; "
                f"stderr:\n{tail(server.stderr_path)}",
            )
        code = stop(server, run.where, run.cell["stop_grace_s"])
        run.exit_codes["server"] = code
        if code != 0:
            raise RunFailure(
                "server_exit",
                f"server exited with code {code} after SIGTERM; "
                f"stderr:\n{tail(server.stderr_path)}",
            )


# -- waiting for the contract's lines -----------------------------------------------------------


def _wait_ready(server: Child, timeout_s: float) -> tuple[int, str] | None:
    """Wait for READY, giving up early when the server (or its remote srun task) exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        wait_s = min(0.2, max(0.0, deadline - time.monotonic()))
        got = server.watcher.wait_for(lines.READY_PREFIX, wait_s)
        if got is not None:
            return got
        if server.popen.poll() is not None or remote_exit_code(server) is not None:
            return None
        if time.monotonic() >= deadline:
            return None


def _await_connected(run: Run, clients: list[Child], cell: dict[str, Any]) -> int:
    """Wait for every client's CONNECTED line; the time the last one arrived.

    Each client's connect_s (from its first connection attempt to its last player connected)
    goes to meta.json's connect_s by process name; null when its line carried no number.
    """
    deadline = time.monotonic() + cell["connect_timeout_s"]
    last_ns = 0
    connected = 0
    for child in clients:
        got = child.watcher.wait_for(lines.CONNECTED_PREFIX, max(0.0, deadline - time.monotonic()))
        if got is None:
            run.counts["players_connected"] = connected
            raise _not_connected(run, child, cell, connected)
        t_ns, line = got
        reported = lines.fields(line)
        connected += int(reported.get("players", "0"))
        run.meta.setdefault("connect_s", {})[child.name] = _seconds(reported.get("connect_s"))
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


def _not_connected(run: Run, child: Child, cell: dict[str, Any], connected: int) -> RunFailure:
    """Why child printed no CONNECTED line in time: it exited, or its players are missing."""
    code = child.popen.poll()
    if code is None and child.watcher.at_eof:
        # Its stdout closed before the line: the client is exiting, and its exit status follows
        # within moments (poll() alone races the reaping and misnamed such runs players_missing).
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = child.popen.wait(timeout=EXIT_STATUS_WAIT_S)
    if code is not None:
        run.exit_codes[child.name] = code
        return RunFailure(
            "client_exit",
            f"{child.name} exited with code {code} before all its players connected"
            f"{' (connect failure)' if code == 4 else ''}; "
            f"stderr:\n{tail(child.stderr_path)}",
            players_connected=connected,
            players_expected=cell["players"],
        )
    return RunFailure(
        "players_missing",
        f"{child.name} did not report all its players connected within "
        f"{cell['connect_timeout_s']:g} s: {connected} of {cell['players']} connected",
        players_connected=connected,
        players_expected=cell["players"],
    )


def _seconds(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# -- processes and metadata ---------------------------------------------------------------------


def _prefixed(run: Run, where: placement.Placement, role: str, index: int, name: str) -> list[str]:
    prefix = (
        list(run.sandbox.prefix(role))
        if run.sandbox is not None
        else where.prefix(role, index, name)
    )
    # Recorded per process: with SLURM placement the srun prefix names the node it ran on.
    run.meta.setdefault("launch_prefixes", {})[name] = prefix
    return prefix


def _first_player(argv: list[str]) -> str:
    for flag, value in itertools.pairwise(argv):
        if flag == "-first-player":
            return value
    return "0"


def _meta(run: Run, repo: Path) -> dict[str, Any]:
    cell = run.cell
    started = run.meta.pop("prototypes", [])  # kept under versions, with what the logs report
    return {
        "schema": META_SCHEMA,
        "campaign": cell.get("campaign"),
        "cell_id": cell.get("cell_id"),
        "run_id": cell.get("run_id"),
        "seed": cell.get("seed"),
        "cell": cell,
        "versions": collect_run(repo, started, run.tmp / "logs"),
        **run.meta,
    }
