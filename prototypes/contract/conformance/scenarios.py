"""The scenarios of a check session; each feeds several checks (see CHECKS)."""

from __future__ import annotations

import contextlib
import itertools
import re
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TypeVar

from prototypes.contract import lines
from prototypes.contract.argv import client_argvs, server_argv
from prototypes.contract.checklogs import check_library_versions
from prototypes.contract.conformance.session import (
    BAD_ARGS_WAIT_S,
    BAD_FLAG,
    BAD_WORKLOAD,
    CLIENT_EXIT_SLACK_S,
    CONNECT_TIMEOUT_S,
    CONTRACT_CONNECT_TIMEOUT_S,
    EXIT_SLACK_S,
    RUN_PER_PROCESS,
    RUN_PLAYERS,
    SETTLE_S,
    STOP_LIMIT_S,
    STOP_TOLERANCE_S,
    STREAM_PARAMS,
    ConformanceError,
    Session,
    await_connected,
    code_text,
    connected_problems,
    first_line,
    last_line,
    log_violations,
    meta_problems,
    start_server,
    stderr_tail,
    stdout_text,
    stop_server,
    wait_exit,
)
from prototypes.contract.logs import parse_detail, read_events_csv, read_rtt_csv
from prototypes.contract.manifest import contract_workloads
from prototypes.contract.processes import (
    LOOPBACK,
    Child,
    pick_free_port,
    signal_group,
)

_T = TypeVar("_T")

# Checks fed by the runs' logs besides run-<workload> itself.
RUN_CHECKS = ("rtt-kinds", "probes-events", "player-events", "library-versions")
# A probe is at least 18 bytes (CONTRACT.md 3.2): a smaller size is a bad parameter.
BAD_PROBE_SIZE = "17"

# -- scenarios --------------------------------------------------------------------------------


def scenario_run(s: Session, workload: str) -> None:
    check = f"run-{workload}"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    params = STREAM_PARAMS if workload == "stream" else {}
    port = pick_free_port()
    server = start_server(s, run_dir, port, workload, params)
    if server is None:
        s.fail(check, "not run: the server did not become ready (see ready-line)")
        for c in RUN_CHECKS:
            s.skip(c, "the server did not become ready")
        return
    cell = s.cell(workload, params=dict(params), players=RUN_PLAYERS, duration_s=s.duration_s)
    argvs = client_argvs(
        s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir,
        players_per_process=min(RUN_PER_PROCESS, s.man.players_per_process),
    )  # fmt: skip
    clients = []  # (child, first player, players)
    for argv in argvs:
        first, count = _flag_int(argv, "-first-player"), _flag_int(argv, "-players")
        clients.append((s.spawn(f"client-{first}", argv, run_dir), first, count))
    deadline = time.monotonic() + s.duration_s + CLIENT_EXIT_SLACK_S
    codes: dict[str, int | None] = {}
    for child, first, count in clients:
        code, _ = wait_exit(child, deadline - time.monotonic())
        codes[child.name] = code
        if code is None:
            s.fail(
                check,
                f"{child.name} still running {s.duration_s + CLIENT_EXIT_SLACK_S:g} s after its "
                f"start with -duration {s.duration_s:g}; killed",
            )
            signal_group(child, signal.SIGKILL)
            child.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                check,
                f"{child.name} {code_text(code)}, expected 0 after its duration; stderr: "
                f"{stderr_tail(child, 3)}",
            )
        got = child.watcher.wait_for(lines.CONNECTED_PREFIX, 1.0)
        if got is None:
            s.fail(check, f"{child.name} printed no {lines.CONNECTED_PREFIX} line")
        else:
            for p in connected_problems(child.name, got[1], count, first):
                s.fail(check, p)
        for p in meta_problems(log_dir, child.name, code):
            s.fail(check, p)
    stop_server(s, server, run_dir)
    for v in log_violations(log_dir):
        s.fail(check, v)
    if not s.violations.get(check):
        s.ok(check, f"{len(clients)} client processes exited 0, logs conform")
    # A client that did not run its course (killed, or exited with an error) wrote no exit
    # events: the cause is run-<workload>'s, and the checks that read a finished client's logs
    # judge only the clients that finished, rather than count that cause again.
    finished = [c for c in clients if codes[c[0].name] == 0]
    for dependent, judge in (
        ("rtt-kinds", _check_rtt_kinds),
        ("probes-events", _check_probes_events),
        ("player-events", _check_player_events),
    ):
        if finished:
            judge(s, log_dir, workload, finished)
        else:
            s.skip(dependent, f"no client of the {workload} run exited 0 (see {check})")
    _check_library_versions(s, log_dir, workload)


def _flag_int(argv: list[str], flag: str) -> int:
    for a, b in itertools.pairwise(argv):
        if a == flag:
            return int(b)
    raise ConformanceError(f"manifest's client_command renders no {flag} <n>: {argv}")


def _players_text(players: list[int]) -> str:
    return ", ".join(map(str, players[:10])) + (
        f" and {len(players) - 10} more" if len(players) > 10 else ""
    )


_Clients = list[tuple[Child, int, int]]  # (client process, first player, players)


def _client_logs(
    s: Session,
    check: str,
    log_dir: Path,
    workload: str,
    clients: _Clients,
    suffix: str,
    read: Callable[[Path], _T],
) -> Iterator[tuple[str, _T, range]]:
    """(file name, contents, players) of each client's log file of one kind (suffix, e.g.
    "rtt.csv"); a file that cannot be read fails the check and is skipped."""
    for child, first, count in clients:
        path = log_dir / f"{child.name}.{suffix}"
        try:
            contents = read(path)
        except (OSError, ValueError) as exc:
            s.fail(check, f"{workload}: cannot read {path.name}: {exc}")
            continue
        yield path.name, contents, range(first, first + count)


def _missing(players: range, have: Collection[int]) -> str | None:
    """The players not in have, as words; None when none is missing."""
    missing = [p for p in players if p not in have]
    return _players_text(missing) if missing else None


def _check_rtt_kinds(s: Session, log_dir: Path, workload: str, clients: _Clients) -> None:
    logs = _client_logs(s, "rtt-kinds", log_dir, workload, clients, "rtt.csv", read_rtt_csv)
    for name, rtt, players in logs:
        for kind in ("net", "app"):
            if who := _missing(players, {int(p) for p in rtt.player[rtt.kind == kind]}):
                s.fail(
                    "rtt-kinds",
                    f"{workload}: {name} has no rows of kind {kind} for player(s) {who} (probes "
                    f"at the default -probe-hz 10 for {s.duration_s:g} s)",
                )
    if "rtt-kinds" not in s.violations:
        s.ok("rtt-kinds", "net and app rows for every player")


def _check_probes_events(s: Session, log_dir: Path, workload: str, clients: _Clients) -> None:
    logs = _client_logs(
        s, "probes-events", log_dir, workload, clients, "events.csv", read_events_csv
    )
    for name, rows, players in logs:
        seen: dict[tuple[int, str], int] = defaultdict(int)
        for row in rows:
            if row["event"] == "probes" and row["player"].isdigit():
                seen[(int(row["player"]), parse_detail(row["detail"]).get("kind", ""))] += 1
        for kind in ("net", "app"):
            if who := _missing(players, {p for (p, k) in seen if k == kind}):
                s.fail(
                    "probes-events",
                    f"{workload}: {name} has no probes event with kind={kind} for player(s) "
                    f"{who}; one is written per player and kind at exit",
                )
            repeated = [p for p in players if seen[(p, kind)] > 1]
            if repeated:
                s.fail(
                    "probes-events",
                    f"{workload}: {name} has several probes events with kind={kind} for "
                    f"player(s) {_players_text(repeated)}; expected one at exit",
                )
    if "probes-events" not in s.violations:
        s.ok("probes-events", "one per player and kind")


def _check_player_events(s: Session, log_dir: Path, workload: str, clients: _Clients) -> None:
    """Every player of a client that ran its course connected and loaded the world, once."""
    logs = _client_logs(
        s, "player-events", log_dir, workload, clients, "events.csv", read_events_csv
    )
    for name, rows, players in logs:
        for event in ("connect", "world_loaded"):
            have = {int(r["player"]) for r in rows if r["event"] == event and r["player"].isdigit()}
            if who := _missing(players, have):
                s.fail(
                    "player-events",
                    f"{workload}: {name} has no {event} event for player(s) {who}; every "
                    "connected player logs one, whatever the workload (world_loaded with "
                    "objects=0 for an empty world)",
                )
    if "player-events" not in s.violations:
        s.ok("player-events", "connect and world_loaded for every player")


def _check_library_versions(s: Session, log_dir: Path, workload: str) -> None:
    for v in check_library_versions(log_dir, s.man):
        s.fail("library-versions", f"{workload}: {v}")
    if "library-versions" not in s.violations:
        s.ok(
            "library-versions",
            f"every process records the manifest's {len(s.man.library_versions)} libraries",
        )


def scenario_sigterm_client(s: Session) -> None:
    run_dir = s.work_dir / "sigterm-client"
    log_dir = run_dir / "logs"
    port = pick_free_port()
    server = start_server(s, run_dir, port)
    if server is None:
        for c in ("sigterm-client", "port-in-use", "sigterm-server"):
            s.skip(c, "the server did not become ready (see ready-line)")
        return
    _check_port_in_use(s, run_dir, port)
    # -duration 0: until SIGTERM (CONTRACT.md section 1), so the client is still running when
    # the signal comes.
    cell = s.cell("idle", players=2, duration_s=0)
    (argv,) = client_argvs(s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir)
    client = s.spawn("client-0", argv, run_dir)
    connected, problems = await_connected(client, 2, 0)
    if not connected:
        for p in problems:
            s.fail("sigterm-client", f"not run: {p}")
        s.skip("duration-zero", "the client did not connect (see sigterm-client)")
    elif (early := _exited_early(s, client)) is not None:
        s.skip("sigterm-client", "not run: the client had exited (see duration-zero)")
        for p in meta_problems(log_dir, "client-0", early):
            s.fail("duration-zero", p)
    else:
        signal_group(client, signal.SIGTERM)
        code, waited = wait_exit(client, STOP_LIMIT_S + STOP_TOLERANCE_S)
        if code is None:
            s.fail("sigterm-client", f"client did not exit within {STOP_LIMIT_S:g} s of SIGTERM")
            signal_group(client, signal.SIGKILL)
            client.popen.wait(timeout=5)
        elif code != 0:
            s.fail(
                "sigterm-client",
                f"client {code_text(code)}, expected to exit 0 after SIGTERM; stderr: "
                f"{stderr_tail(client, 3)}",
            )
        else:
            s.ok("sigterm-client", f"client exited 0 {waited:.2f} s after SIGTERM")
        for p in meta_problems(log_dir, "client-0", code):
            s.fail("sigterm-client", p)
        for v in log_violations(log_dir, "client-"):
            s.fail("sigterm-client", f"after SIGTERM: {v}")
    stop_server(s, server, run_dir)
    for v in log_violations(log_dir, "server"):
        s.fail("sigterm-server", f"after SIGTERM: {v}")


def _exited_early(s: Session, client: Child) -> int | None:
    """A client started with -duration 0 is still running SETTLE_S after it connected (it runs
    until SIGTERM); its exit code if it was not, else None."""
    time.sleep(SETTLE_S)
    code = client.popen.poll()
    if code is None:
        s.ok("duration-zero", f"still running {SETTLE_S:g} s after CONNECTED with -duration 0")
        return None
    s.fail(
        "duration-zero",
        f"client started with -duration 0 {code_text(code)} within {SETTLE_S:g} s of "
        f"connecting; -duration 0 means: run until SIGTERM or SIGINT (CONTRACT.md section 1); "
        f"stderr: {stderr_tail(client, 3)}",
    )
    return code


def scenario_other_role_flags(s: Session) -> None:
    """Both roles accept every flag of both tables; a flag of the other role is ignored, not an
    error (CONTRACT.md section 1): a server given a client's -players and -first-player (and the
    optional client flags the manifest declares) starts and stops like any server."""
    check = "other-role-flags"
    run_dir = s.work_dir / check
    given = ["-players", "3", "-first-player", "2", *s.client_flags(connect_timeout_s=5)]
    cell = s.cell("idle")
    argv = server_argv(s.man, cell, host=LOOPBACK, port=pick_free_port(), log_dir=run_dir / "logs")
    child = s.spawn("server", [*argv, *given], run_dir)
    ready = child.watcher.wait_for(lines.READY_PREFIX, s.man.ready_timeout_s)
    if ready is None:
        code = child.popen.poll()
        what = (
            f"printed no READY line within {s.man.ready_timeout_s:g} s"
            if code is None
            else f"{code_text(code)} before READY"
        )
        s.fail(
            check,
            f"server given the client's flags {' '.join(given)} {what}; a flag of the other "
            f"role is ignored, not an error (CONTRACT.md section 1); stderr: "
            f"{stderr_tail(child, 3)}",
        )
        if code is None:
            signal_group(child, signal.SIGKILL)
            child.popen.wait(timeout=5)
        return
    signal_group(child, signal.SIGTERM)
    wait_exit(child, STOP_LIMIT_S + STOP_TOLERANCE_S)
    s.ok(check, f"server started with {' '.join(given)}")


def _check_port_in_use(s: Session, run_dir: Path, port: int) -> None:
    """A second server on the port of a running one must exit 3 (could not bind)."""
    second_dir = run_dir / "second-server"
    argv = server_argv(s.man, s.cell("idle"), host=LOOPBACK, port=port, log_dir=second_dir / "logs")
    child = s.spawn("server", argv, second_dir)
    ready = child.watcher.wait_for(lines.READY_PREFIX, s.man.ready_timeout_s)
    code, _ = wait_exit(child, 0 if ready else 1.0)
    if ready is not None:
        s.fail(
            "port-in-use",
            f"a second server printed READY although port {port} is taken by the first one; "
            "expected exit code 3 (could not bind)",
        )
    elif code is None:
        s.fail(
            "port-in-use",
            f"a second server on the busy port {port} neither exited nor printed READY "
            f"within {s.man.ready_timeout_s:g} s; expected exit code 3",
        )
    elif code != 3:
        s.fail(
            "port-in-use",
            f"a second server on the busy port {port} {code_text(code)}, expected 3; stderr: "
            f"{stderr_tail(child, 3)}",
        )
    else:
        s.ok("port-in-use", "second server exited 3")
    if code is None:
        signal_group(child, signal.SIGKILL)
        child.popen.wait(timeout=5)


def scenario_server_lost(s: Session) -> None:
    check = "server-lost"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    port = pick_free_port()
    server = start_server(s, run_dir, port)
    if server is None:
        s.skip(check, "the server did not become ready (see ready-line)")
        return
    (argv,) = client_argvs(
        s.man, s.cell("idle", players=2, duration_s=60), host=LOOPBACK, port=port, log_dir=log_dir
    )
    client = s.spawn("client-0", argv, run_dir)
    connected, problems = await_connected(client, 2, 0)
    if not connected:
        for p in problems:
            s.fail(check, f"not run: {p}")
        return
    time.sleep(SETTLE_S / 2)
    signal_group(server, signal.SIGKILL)
    server.popen.wait(timeout=5)
    limit_s = s.man.transport(s.transport).server_lost_s
    code, waited = wait_exit(client, limit_s + EXIT_SLACK_S)
    if code is None:
        s.fail(
            check,
            f"client still running {limit_s + EXIT_SLACK_S:g} s after its server was killed "
            f"(manifest server_lost_s {limit_s:g} + {EXIT_SLACK_S:g} s); expected exit code 5",
        )
        signal_group(client, signal.SIGKILL)
        client.popen.wait(timeout=5)
    elif code != 5:
        s.fail(
            check,
            f"client {code_text(code)} after its server was killed, expected 5 (connection "
            f"lost); stderr: {stderr_tail(client, 3)}",
        )
    else:
        s.ok(check, f"client exited 5 {waited:.2f} s after the server was killed")
    for p in meta_problems(log_dir, "client-0", code):
        s.fail(check, p)
    events = log_dir / "client-0.events.csv"
    with contextlib.suppress(OSError, ValueError):
        if code == 5 and not any(r["event"] == "server_lost" for r in read_events_csv(events)):
            s.fail(check, f"{events.name} has no server_lost event after the server was lost")
    for v in log_violations(log_dir):
        s.fail(check, f"after SIGKILL of the server: {v}")


def scenario_server_stop(s: Session) -> None:
    """A server stopped by SIGTERM during a client's run closes its connections: the client
    sees a lost server (exit 5, server_lost), not a finished run."""
    check = "server-stop"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    port = pick_free_port()
    server = start_server(s, run_dir, port)
    if server is None:
        s.skip(check, "the server did not become ready (see ready-line)")
        return
    (argv,) = client_argvs(
        s.man, s.cell("idle", players=2, duration_s=60), host=LOOPBACK, port=port, log_dir=log_dir
    )
    client = s.spawn("client-0", argv, run_dir)
    connected, problems = await_connected(client, 2, 0)
    if not connected:
        for p in problems:
            s.fail(check, f"not run: {p}")
        stop_server(s, server, run_dir)
        return
    time.sleep(SETTLE_S / 2)
    if not stop_server(s, server, run_dir):
        s.skip(check, "not judged: the server did not stop on SIGTERM (see sigterm-server)")
        return
    limit_s = s.man.transport(s.transport).server_lost_s
    code, waited = wait_exit(client, limit_s + EXIT_SLACK_S)
    if code is None:
        s.fail(
            check,
            f"client still running {limit_s + EXIT_SLACK_S:g} s after its server stopped on "
            f"SIGTERM (manifest server_lost_s {limit_s:g} + {EXIT_SLACK_S:g} s); expected "
            "exit code 5: a stopping server closes its connections",
        )
        signal_group(client, signal.SIGKILL)
        client.popen.wait(timeout=5)
    elif code != 5:
        s.fail(
            check,
            f"client {code_text(code)} after its server stopped on SIGTERM, expected 5 (the "
            f"server left during the run); stderr: {stderr_tail(client, 3)}",
        )
    else:
        s.ok(check, f"client exited 5 {waited:.2f} s after the server's SIGTERM")
    for p in meta_problems(log_dir, "client-0", code):
        s.fail(check, p)
    events = log_dir / "client-0.events.csv"
    with contextlib.suppress(OSError, ValueError):
        if code == 5 and not any(r["event"] == "server_lost" for r in read_events_csv(events)):
            s.fail(check, f"{events.name} has no server_lost event after the server stopped")
    for v in log_violations(log_dir, "client-"):
        s.fail(check, f"after the server's SIGTERM: {v}")


def _expect_usage_error(s: Session, check: str, role: str, argv: list[str], run_dir: Path,
                        named: tuple[str, ...], what: str) -> None:  # fmt: skip
    """The process must exit 2 at once, name the culprit on stderr and print nothing."""
    child = s.spawn(role, argv, run_dir)
    deadline = time.monotonic() + BAD_ARGS_WAIT_S
    started = None
    while time.monotonic() < deadline and child.popen.poll() is None:
        started = child.watcher.wait_for(lines.PREFIX, 0.05)
        if started is not None:
            break
    code = child.popen.poll()
    if code is None:
        signal_group(child, signal.SIGKILL)
        child.popen.wait(timeout=5)
    problems = []
    if started is not None:
        problems.append(f"{role} accepted {what} and started (printed {started[1]!r})")
    elif code is None:
        problems.append(f"{role} was still running {BAD_ARGS_WAIT_S:g} s after {what}")
    elif code != 2:
        problems.append(f"{role} {code_text(code)} for {what}, expected 2 (bad arguments)")
    stdout = stdout_text(child)
    if stdout.strip() and started is None:
        problems.append(
            f"{role} wrote {first_line(stdout)!r} to stdout for {what}; expected nothing"
        )
    try:
        stderr = child.stderr_path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        stderr = ""
    if started is None and not any(n in stderr for n in named):
        problems.append(
            f"{role}'s stderr does not name {named[0]!r} for {what}: {last_line(stderr)!r}"
        )
    for p in problems:
        s.fail(check, p)
    if not problems:
        s.ok(check, f"{role}: exit 2, {last_line(stderr)[:80]!r}")


def scenario_bad_args(s: Session) -> None:
    base = s.work_dir / "bad-args"
    workload = s.man.workloads[0]
    cases = [
        ("bad-flag", s.cell(workload), [BAD_FLAG, "1"], (BAD_FLAG, BAD_FLAG[1:]),
         f"the unknown flag {BAD_FLAG}"),
        ("unknown-workload", s.cell(BAD_WORKLOAD), [], (BAD_WORKLOAD,),
         f"-workload {BAD_WORKLOAD}"),
    ]  # fmt: skip
    # A workload of the contract that the manifest does not list is refused like an unknown one.
    missing = [w for w in contract_workloads() if w not in s.man.workloads]
    if missing:
        cases.append(("unknown-workload", s.cell(missing[0]), [], (missing[0],),
                      f"-workload {missing[0]} (not in the manifest's workloads)"))  # fmt: skip
    sized = [w for w in ("stream", "pingpong") if w in s.man.workloads]
    if sized:
        cases.append(("bad-param", s.cell(sized[0], params={"size": BAD_PROBE_SIZE}), [],
                      ("size",), f"-workload {sized[0]} -param size={BAD_PROBE_SIZE}"))  # fmt: skip
    else:
        s.skip("bad-param", "the manifest lists neither stream nor pingpong")
    for role in ("server", "client"):
        port = pick_free_port()  # nothing listens: a client that ignores the flag cannot connect
        for check, template, flag_args, named, what in cases:
            cell = dict(template)
            run_dir = base / f"{check}-{role}-{cell['workload']}"
            log_dir = run_dir / "logs"
            if role == "server":
                cell["extra_server_flags"] = flag_args
                argv = server_argv(
                    s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir, check=False
                )
            else:
                cell["extra_client_flags"] = [
                    *flag_args,
                    *s.client_flags(connect_timeout_s=CONNECT_TIMEOUT_S),
                ]
                (argv,) = client_argvs(
                    s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir, check=False
                )
            _expect_usage_error(s, check, role, argv, run_dir, named, what)


def exit4_line_problem(stderr: str, player: int, transport: str, timeout_s: float) -> str | None:
    """What the exit-4 line lacks (CONTRACT.md section 2: one stderr line names the player, the
    transport and the timeout), or None. The line is any one line holding all three: the player
    as "player <n>" (any separator), the transport by name, the timeout as the number given."""
    number = re.escape(f"{timeout_s:g}")
    wants = {
        f"the player ({player})": re.compile(rf"player\W{{0,3}}{player}\b", re.IGNORECASE),
        f"the transport ({transport})": re.compile(rf"\b{re.escape(transport)}\b"),
        f"the timeout ({timeout_s:g})": re.compile(rf"(?<![\d.]){number}(\.0+)?(?![\d.])"),
    }
    rows = [ln for ln in stderr.splitlines() if ln.strip()]
    best = max(rows, key=lambda ln: sum(bool(w.search(ln)) for w in wants.values()), default="")
    missing = [what for what, w in wants.items() if not w.search(best)]
    if not missing:
        return None
    return (
        f"exit 4 but no stderr line names {', '.join(missing)}: expected one line naming the "
        f"player, the transport and the timeout; closest: {best[:200]!r}"
    )


def scenario_no_server(s: Session) -> None:
    check = "no-server"
    run_dir = s.work_dir / check
    log_dir = run_dir / "logs"
    port = pick_free_port()  # free now, and nothing of ours will listen on it
    flags = s.client_flags(connect_timeout_s=CONNECT_TIMEOUT_S)
    timeout_s = CONNECT_TIMEOUT_S if flags else CONTRACT_CONNECT_TIMEOUT_S
    cell = s.cell("idle", players=1, duration_s=5, extra_client_flags=flags)
    (argv,) = client_argvs(s.man, cell, host=LOOPBACK, port=port, log_dir=log_dir)
    client = s.spawn("client-0", argv, run_dir)
    code, waited = wait_exit(client, timeout_s + EXIT_SLACK_S)
    if code is None:
        s.fail(
            check,
            f"client without a server still running {timeout_s + EXIT_SLACK_S:g} s after start "
            f"(connect timeout {timeout_s:g} s); expected exit code 4",
        )
        signal_group(client, signal.SIGKILL)
        client.popen.wait(timeout=5)
    elif code != 4:
        s.fail(
            check,
            f"client without a server {code_text(code)}, expected 4 (could not connect); "
            f"stderr: {stderr_tail(client, 3)}",
        )
    else:
        s.ok(check, f"exit 4 after {waited:.2f} s (connect timeout {timeout_s:g} s)")
        said = exit4_line_problem(
            client.stderr_path.read_text(errors="replace"), 0, cell["transport"], timeout_s
        )
        if said is not None:
            s.fail(check, said)
    if lines.CONNECTED_PREFIX in stdout_text(client):
        s.fail(check, f"client without a server printed {lines.CONNECTED_PREFIX}")
    for p in meta_problems(log_dir, "client-0", code):
        s.fail(check, p)
