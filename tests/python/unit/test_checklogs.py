"""prototypes.contract.checklogs on synthetic log directories: one valid, and one per kind of
breakage."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from prototypes.contract import manifest as mf
from prototypes.contract.checklogs import Violation, check_log_dir
from prototypes.contract.columns import EVENTS_COLUMNS, RTT_COLUMNS, TICKS_COLUMNS
from prototypes.contract.logs import LogFormatError, read_rtt_csv, read_rtt_logs
from workflow.cli.main import main as cli_main

from support.paths import FAKE_MANIFEST

START_NS = time.time_ns() - 60 * 10**9
END_NS = START_NS + 30 * 10**9
T = START_NS + 10**9  # a time well inside the processes' lifetime


def meta(role: str, args: list[str], **overrides: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "schema": 1,
        "role": role,
        "prototype": "reference",
        "transport": "tcp",
        "library_versions": {"go": "go1.26"},
        "args": args,
        "workload": "stream",
        "params": {"size": 100, "rate": 60, "channel": "reliable"},
        "transport_options": {},
        "effective_channels": {
            "reliable": "reliable",
            "unreliable": "reliable (the transport has no unreliable mode)",
        },
        "run_id": "test",
        "seed": 1,
        "pid": 1234,
        "host": "localhost",
        "start_unix_ns": START_NS,
        "status": "exited",
        "end_unix_ns": END_NS,
        "exit_code": 0,
        "exit_reason": "duration elapsed",
    }
    doc.update(overrides)
    return doc


def write_valid(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "server.meta.json").write_text(json.dumps(meta("server", ["proto", "-role", "server"])))
    (d / "client-0.meta.json").write_text(
        json.dumps(
            meta("client", ["proto", "-role", "client", "-players", "2", "-first-player", "0"])
        )
    )
    rtt = [
        f"{T},0,0,250.125,net,12.5",
        f"{T + 1000},1,0,260,net,0",
        f"{T + 2000},0,2,300.5,app,1.25",
        f"{T + 3000},0,1,270.000,app,3.0",  # out of order: allowed (echo order)
        f"{T + 4000},0,0,800.0,lib,",
        f"{T + 5000},1,1,255.5,net,",  # unscheduled send: empty lateness
    ]
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rtt]) + "\n")
    events = [
        f"{T},0,connect,12.5,",
        f"{T},1,connect,13,",
        f"{T},0,spawn,,x=-32 y=0 z=-32",
        f"{T},,malformed,2,error=short message",
        f"{T},0,probes,100,kind=net echoed=98 lost=1 inflight=1",
        f"{T},0,disconnect,,reason=duration",
    ]
    (d / "client-0.events.csv").write_text("\n".join([",".join(EVENTS_COLUMNS), *events]) + "\n")
    server_events = [f"{T},,listen,,addr=127.0.0.1:7777", f"{T},0,join,,remote=127.0.0.1:5000"]
    (d / "server.events.csv").write_text(
        "\n".join([",".join(EVENTS_COLUMNS), *server_events]) + "\n"
    )
    ticks = [f"{T + i * 16_666_667},{i},12.345,80.5,2,2,4,4,400,400" for i in range(3)]
    (d / "server.ticks.csv").write_text("\n".join([",".join(TICKS_COLUMNS), *ticks]) + "\n")
    return d


def set_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().split("\n")
    lines[lineno - 1] = text
    path.write_text("\n".join(lines))


def patch_meta(path: Path, **changes: object) -> None:
    doc = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    path.write_text(json.dumps(doc))


def test_valid_dir_has_no_violations(tmp_path: Path) -> None:
    assert check_log_dir(write_valid(tmp_path / "logs")) == []


def test_killed_process_without_end_time_is_fine(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    for name in ("server.meta.json", "client-0.meta.json"):
        patch_meta(d / name, status="running", end_unix_ns=None, exit_code=None, exit_reason=None)
    assert check_log_dir(d) == []


Mutation = Callable[[Path], object]

CASES: list[tuple[str, Mutation, str, int, str]] = [
    # (id, mutation, file, line, words the message must contain)
    ("unknown-file", lambda d: (d / "notes.txt").write_text("x"), "notes.txt", 0,
     "unexpected file name"),
    ("server-rtt", lambda d: (d / "server.rtt.csv").write_text(",".join(RTT_COLUMNS) + "\n"),
     "server.rtt.csv", 0, "server process does not write rtt.csv"),
    ("missing-ticks", lambda d: (d / "server.ticks.csv").unlink(), "server.ticks.csv", 0,
     "missing"),
    ("header-order", lambda d: set_line(d / "client-0.rtt.csv", 1,
                                        "t_unix_ns,player,seq,kind,rtt_us,send_late_us"),
     "client-0.rtt.csv", 1, "header is"),
    ("partial-line", lambda d: (d / "client-0.rtt.csv").open("a").write(f"{T},0,9,1"),
     "client-0.rtt.csv", 8, "does not end with \\n"),
    ("crlf", lambda d: set_line(d / "server.ticks.csv", 3,
                                f"{T},1,12.345,80.5,2,2,4,4,400,400\r"),
     "server.ticks.csv", 3, "\\r"),
    ("negative-rtt", lambda d: set_line(d / "client-0.rtt.csv", 2, f"{T},0,0,-5,net,1"),
     "client-0.rtt.csv", 2, "rtt_us '-5' is not a decimal number >= 0"),
    ("exponent-rtt", lambda d: set_line(d / "client-0.rtt.csv", 2, f"{T},0,0,1e3,net,1"),
     "client-0.rtt.csv", 2, "rtt_us '1e3'"),
    ("bad-kind", lambda d: set_line(d / "client-0.rtt.csv", 3, f"{T},1,0,260,tcp,0"),
     "client-0.rtt.csv", 3, "kind 'tcp' is not one of net, app, lib"),
    ("lib-lateness", lambda d: set_line(d / "client-0.rtt.csv", 6, f"{T},0,0,800.0,lib,5"),
     "client-0.rtt.csv", 6, "must be empty for kind lib"),
    ("seq-negative", lambda d: set_line(d / "client-0.rtt.csv", 2, f"{T},0,-1,250,net,1"),
     "client-0.rtt.csv", 2, "seq '-1' is not an integer >= 0"),
    ("seq-duplicate", lambda d: set_line(d / "client-0.rtt.csv", 7, f"{T},0,0,255.5,net,"),
     "client-0.rtt.csv", 7, "seq 0 of player 0 kind net repeats line 2"),
    ("player-out-of-range", lambda d: set_line(d / "client-0.rtt.csv", 3, f"{T},7,0,260,net,0"),
     "client-0.rtt.csv", 3, "player 7 is not one of this client's players 0..1"),
    ("too-early", lambda d: set_line(d / "client-0.rtt.csv", 2,
                                     f"{START_NS - 6 * 10**9},0,0,250,net,1"),
     "client-0.rtt.csv", 2, "before the process started"),
    ("too-late", lambda d: set_line(d / "server.ticks.csv", 2,
                                    f"{END_NS + 6 * 10**9},0,1,2,2,2,4,4,400,400"),
     "server.ticks.csv", 2, "after the process ended"),
    ("field-count", lambda d: set_line(d / "client-0.rtt.csv", 2, f"{T},0,0,250,net"),
     "client-0.rtt.csv", 2, "has 5 fields, expected 6"),
    ("comma-in-detail", lambda d: set_line(d / "client-0.events.csv", 4,
                                           f"{T},0,spawn,,x=1, y=2"),
     "client-0.events.csv", 4, "has 6 fields, expected 5"),
    ("unknown-event", lambda d: set_line(d / "client-0.events.csv", 2, f"{T},0,hello,,"),
     "client-0.events.csv", 2, "event 'hello' is not in CONTRACT.md"),
    ("event-wrong-role", lambda d: set_line(d / "server.events.csv", 2, f"{T},0,connect,1,"),
     "server.events.csv", 2, "written by the client only, not by a server"),
    ("event-value", lambda d: set_line(d / "client-0.events.csv", 2, f"{T},0,connect,fast,"),
     "client-0.events.csv", 2, "value 'fast' is not a number or empty"),
    ("probes-detail", lambda d: set_line(d / "client-0.events.csv", 6,
                                         f"{T},0,probes,100,kind=net echoed=98"),
     "client-0.events.csv", 6, "lacks lost="),
    ("probes-player", lambda d: set_line(d / "client-0.events.csv", 6,
                                         f"{T},,probes,100,kind=net echoed=1 lost=0 inflight=0"),
     "client-0.events.csv", 6, "player must not be empty"),
    ("ticks-negative", lambda d: set_line(d / "server.ticks.csv", 3,
                                          f"{T},1,12.3,80.5,-2,2,4,4,400,400"),
     "server.ticks.csv", 3, "players_connected '-2' is not an integer >= 0"),
    ("ticks-order", lambda d: set_line(d / "server.ticks.csv", 4,
                                       f"{T},0,12.3,80.5,2,2,4,4,400,400"),
     "server.ticks.csv", 4, "tick 0 does not follow tick 1"),
    ("schema", lambda d: patch_meta(d / "server.meta.json", schema=2), "server.meta.json", 0,
     "key 'schema' is 2, expected 1"),
    ("meta-missing-key", lambda d: patch_meta(d / "server.meta.json", effective_channels=None),
     "server.meta.json", 0, "missing keys: effective_channels"),
    ("meta-exit-keys", lambda d: patch_meta(d / "client-0.meta.json", exit_code=None),
     "client-0.meta.json", 0, "keys are missing: exit_code"),
    ("meta-role", lambda d: patch_meta(d / "client-0.meta.json", role="server"),
     "client-0.meta.json", 0, "key 'role' is \"server\", expected \"client\""),
    ("meta-json", lambda d: (d / "server.meta.json").write_text('{"schema": 1,\n  oops}'),
     "server.meta.json", 2, "not valid JSON"),
    ("first-player", lambda d: patch_meta(d / "client-0.meta.json",
                                          args=["proto", "-role", "client", "-players", "2",
                                                "-first-player=5"]),
     "client-0.meta.json", 0, "must be named client-5.*"),
    # An RTT written in ms: 0.25 ms is 250 µs (a round trip can never take under 5 µs).
    ("rtt-in-ms", lambda d: set_line(d / "client-0.rtt.csv", 3, f"{T + 1000},1,0,0.26,net,0"),
     "client-0.rtt.csv", 3, "1 rtt_us value(s) of kind net below RTT_FLOOR_US = 5 µs"),
    ("early-send", lambda d: set_line(d / "client-0.rtt.csv", 2, f"{T},0,0,250.125,net,-3.5"),
     "client-0.rtt.csv", 2, "send_late_us '-3.5' is not a decimal number >= 0"),
    ("args-without-program", lambda d: patch_meta(d / "server.meta.json", args=["-role", "server"]),
     "server.meta.json", 0, "args begins with '-role': the first element is the program"),
    ("args-of-another-role", lambda d: patch_meta(d / "server.meta.json",
                                                  args=["proto", "-role", "client"]),
     "server.meta.json", 0, "args hold -role client, but this is the server's meta.json"),
    ("host-empty", lambda d: patch_meta(d / "server.meta.json", host=""),
     "server.meta.json", 0, "key 'host' is \"\", expected the name of the machine"),
    ("channels-by-library", lambda d: patch_meta(d / "client-0.meta.json",
                                                 effective_channels={"reliable": "tcp"}),
     "client-0.meta.json", 0, 'expected an object with the keys "reliable" and "unreliable"'),
    ("probes-none-sent", lambda d: set_line(d / "client-0.events.csv", 6,
                                            f"{T},0,probes,0,kind=app echoed=0 lost=0 inflight=0"),
     "client-0.events.csv", 6, "no probes event is written for a kind the player never sent"),
    ("probes-lib", lambda d: set_line(d / "client-0.events.csv", 6,
                                      f"{T},0,probes,5,kind=lib echoed=5 lost=0 inflight=0"),
     "client-0.events.csv", 6, "lacks kind=net|app (lib is read, not probed)"),
    ("probes-sum", lambda d: set_line(d / "client-0.events.csv", 6,
                                      f"{T},0,probes,100,kind=net echoed=90 lost=1 inflight=1"),
     "client-0.events.csv", 6, "echoed + lost + inflight = 92, but the value says 100"),
    ("probes-twice", lambda d: set_line(d / "client-0.events.csv", 7,
                                        f"{T},0,probes,3,kind=net echoed=3 lost=0 inflight=0"),
     "client-0.events.csv", 7, "event 'probes' of player 0 kind net repeats line 6"),
    ("connect-twice", lambda d: set_line(d / "client-0.events.csv", 3, f"{T},0,connect,13,"),
     "client-0.events.csv", 3, "event 'connect' of player 0 repeats line 2"),
    ("world-loaded-anonymous", lambda d: set_line(d / "client-0.events.csv", 7,
                                                  f"{T},,world_loaded,1.5,objects=0 bytes=0"),
     "client-0.events.csv", 7, "event 'world_loaded' is about one player"),
    ("spawn-elsewhere", lambda d: set_line(d / "client-0.events.csv", 4,
                                           f"{T},0,spawn,,x=1 y=2 z=3"),
     "client-0.events.csv", 4, "player 0 spawned at x=1 y=2 z=3, expected x=-32 y=0 z=-32"),
    ("objects-below-players", lambda d: set_line(d / "server.ticks.csv", 2,
                                                 f"{T},0,12.345,80.5,2,1,4,4,400,400"),
     "server.ticks.csv", 2, "networked_objects 1 < players_connected 2"),
    ("bytes-below-messages", lambda d: set_line(d / "server.ticks.csv", 3,
                                                f"{T + 16_666_667},1,12.345,80.5,2,2,4,4,400,3"),
     "server.ticks.csv", 3, "bytes_out 3 < msgs_out 4"),
    ("shared-socket", lambda d: (d / "server.events.csv").open("a").write(
        f"{T},1,join,,remote=127.0.0.1:5000\n"),
     "server.events.csv", 4, "player 1 joined from remote=127.0.0.1:5000, the address of player 0"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "file", "line", "words"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_each_violation_is_named_with_file_and_line(
    tmp_path: Path, mutate: Mutation, file: str, line: int, words: str
) -> None:
    d = write_valid(tmp_path / "logs")
    mutate(d)
    violations = check_log_dir(d)
    assert any(v.file == file and v.line == line and words in v.message for v in violations), (
        "\n".join(map(str, violations))
    )


def test_violation_str_names_file_and_line() -> None:
    assert str(Violation("client-0.rtt.csv", 7, "bad")) == "client-0.rtt.csv:7: bad"
    assert str(Violation("server.ticks.csv", 0, "missing")) == "server.ticks.csv: missing"


def test_not_a_directory(tmp_path: Path) -> None:
    [v] = check_log_dir(tmp_path / "nope")
    assert "not a directory" in v.message


def test_violations_are_capped_per_file(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    rows = [f"{T},0,{i},-1,net,0" for i in range(30)]
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rows]) + "\n")
    violations = check_log_dir(d, max_per_file=10)
    rtt = [v for v in violations if v.file == "client-0.rtt.csv"]
    assert len(rtt) == 11
    assert "20 more violations not shown" in rtt[0].message


def test_check_logs_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_valid(tmp_path / "logs")
    assert cli_main(["check-logs", str(d)]) == 0
    assert "conforms" in capsys.readouterr().out
    set_line(d / "client-0.rtt.csv", 2, f"{T},0,0,-5,net,1")
    assert cli_main(["check-logs", str(d)]) == 1
    assert "client-0.rtt.csv:2: rtt_us '-5'" in capsys.readouterr().out


def test_a_player_that_left_frees_its_address(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    with (d / "server.events.csv").open("a") as f:
        f.write(f"{T + 1},0,disconnect,,reason=closed\n")
        f.write(f"{T + 2},1,join,,remote=127.0.0.1:5000\n")  # the port, reused later
    assert check_log_dir(d) == []


TICK_NS = 16_666_667  # 60 Hz
TICK_WORK_NS = 80_000


def write_app_probes(d: Path, echo: str, seconds: float = 2.0) -> None:
    """A server ticking at 60 Hz and 2 players with 10 Hz app probes at seeded phases, echoed
    in the next tick (echo="tick", as the contract asks) or in the receive path ("receive")."""
    rng = np.random.default_rng(7)
    first_tick = T + 10**9
    n_ticks = int(seconds * 60)
    tick_end = first_tick + np.arange(n_ticks) * TICK_NS
    ticks = [
        f"{t},{k + 1},12.5,{TICK_WORK_NS / 1000},2,2,4,4,400,400"
        for k, t in enumerate(tick_end.tolist())
    ]
    (d / "server.ticks.csv").write_text("\n".join([",".join(TICKS_COLUMNS), *ticks]) + "\n")
    one_way_ns = 20_000
    rows = []
    for player in (0, 1):
        phase = int(rng.integers(0, 100_000_000))
        for seq in range(int(seconds * 10) - 1):
            sent = first_tick + phase + seq * 100_000_000
            if echo == "tick":  # sent during the first tick that starts after the probe arrived
                k = int(np.searchsorted(tick_end - TICK_WORK_NS, sent + one_way_ns))
                echoed = int(tick_end[k]) - TICK_WORK_NS // 2 + one_way_ns
            else:
                echoed = sent + 2 * one_way_ns + int(rng.integers(0, 10_000))
            rows.append(f"{sent},{player},{seq},{(echoed - sent) / 1000:.3f},app,3.5")
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rows]) + "\n")


def test_app_probes_echoed_by_ticks_conform(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    write_app_probes(d, "tick")
    assert check_log_dir(d) == []


def test_app_probes_echoed_in_the_receive_path_are_named(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    write_app_probes(d, "receive")
    [v] = check_log_dir(d)
    assert (v.file, v.line) == ("client-0.rtt.csv", 2)
    assert v.message.startswith("38 of 38 app probes were answered between the server's ticks")
    assert "not in its receive path (CONTRACT.md 3.2)" in v.message


def test_app_tick_check_needs_one_clock_and_the_ticks(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    write_app_probes(d, "receive")
    # A client on another machine has another clock: its windows cannot be laid on the ticks.
    patch_meta(d / "client-0.meta.json", host="node2")
    assert check_log_dir(d) == []
    # Probes answered after the last tick row (a killed server's last rows are missing) are
    # not judged: here every probe was answered after it.
    d = write_valid(tmp_path / "killed")
    write_app_probes(d, "receive")
    lines = (d / "server.ticks.csv").read_text().splitlines()
    (d / "server.ticks.csv").write_text("\n".join(lines[:2]) + "\n")
    assert check_log_dir(d) == []


def manifest_with(
    tmp_path: Path, versions: dict[str, str], tcp_library: str | None = None
) -> mf.Manifest:
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["library_versions"] = versions
    if tcp_library is not None:
        doc["transports"][0]["library"] = tcp_library
    return mf.parse(doc, tmp_path / "prototype.yaml")


def test_library_versions_are_compared_with_the_manifest(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    assert check_log_dir(d, manifest=manifest_with(tmp_path, {"go": "go1.26"})) == []
    man = manifest_with(tmp_path, {"go": "9.9", "libenet": "1.3.17"})
    got = [str(v) for v in check_log_dir(d, manifest=man)]
    path = tmp_path / "prototype.yaml"
    for proc in ("client-0", "server"):
        assert (
            f"{proc}.meta.json: library_versions says go 'go1.26' but the manifest {path} says "
            "'9.9': the process ran with another version than declared"
        ) in got
    # libenet is absent, but these processes ran tcp, and libenet is no transport's library
    # in this manifest: every name it declares is required.
    for proc in ("client-0", "server"):
        assert (
            f"{proc}.meta.json: library_versions lacks libenet, which the manifest {path} "
            "declares as '1.3.17'; every process records every library and toolchain the "
            "manifest names (but other transports' libraries), with the version it runs with"
        ) in got
    assert len(got) == 4
    # The library of another transport may be absent (a build without libenet runs tcp).
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["library_versions"] = {"go": "go1.26", "libenet": "1.3.17"}
    doc["transports"].append({**doc["transports"][0], "name": "enet", "library": "libenet (x)"})
    two = mf.parse(doc, tmp_path / "prototype.yaml")
    assert check_log_dir(d, manifest=two) == []
    # A process recording nothing is named for each declared library: a manifest whose
    # transport library is no declared name ("Python sockets") exempts nothing.
    for name in ("server.meta.json", "client-0.meta.json"):
        patch_meta(d / name, library_versions={})
    man = manifest_with(tmp_path, {"python": "3.11"}, tcp_library="Python sockets")
    got = [str(v) for v in check_log_dir(d, manifest=man)]
    assert len(got) == 2 and all("library_versions lacks python" in v for v in got), got


def test_check_logs_cli_compares_with_a_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = write_valid(tmp_path / "logs")
    doc = yaml.safe_load(FAKE_MANIFEST.read_text())
    doc["library_versions"] = {"go": "9.9"}
    doc["executable"] = str(FAKE_MANIFEST.with_name(doc["executable"]))
    man = tmp_path / "prototype.yaml"
    man.write_text(yaml.safe_dump(doc))
    assert cli_main(["check-logs", str(d), "--manifest", str(man)]) == 1
    out = capsys.readouterr().out
    assert f"server.meta.json: library_versions says go 'go1.26' but the manifest {man}" in out
    man.write_text("name: x\n")
    assert cli_main(["check-logs", str(d), "--manifest", str(man)]) == 2
    assert "contract_schema: missing" in capsys.readouterr().err


def test_read_rtt_csv_columns(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    with (d / "client-0.rtt.csv").open("a") as f:
        f.write(f"{T},1,9,1")  # a partial last line is ignored by the reader
    cols = read_rtt_csv(d / "client-0.rtt.csv")
    assert len(cols) == 6
    assert cols.t_unix_ns.dtype == np.int64 and cols.t_unix_ns[0] == T  # exact, no float
    assert cols.kind.tolist() == ["net", "net", "app", "app", "lib", "net"]
    assert cols.rtt_us.tolist() == [250.125, 260.0, 300.5, 270.0, 800.0, 255.5]
    assert cols.seq.tolist() == [0, 0, 2, 1, 0, 1]
    assert np.isnan(cols.send_late_us[4]) and np.isnan(cols.send_late_us[5])
    assert cols.send_late_us[0] == 12.5
    assert len(read_rtt_logs(d)) == 6


def test_read_rtt_csv_header_only_and_bad_header(tmp_path: Path) -> None:
    path = tmp_path / "client-0.rtt.csv"
    path.write_text(",".join(RTT_COLUMNS) + "\n")
    assert len(read_rtt_csv(path)) == 0
    path.write_text("a,b\n1,2\n")
    with pytest.raises(LogFormatError) as err:
        read_rtt_csv(path)
    # The file and the header it should have, in the message.
    assert str(path) in str(err.value) and ",".join(RTT_COLUMNS) in str(err.value)
    assert err.value.path == path


BAD_RTT_ROWS = [
    "oops,0,5,1.0,net,2",  # not an integer
    f"{T},0,6,1.0,warp,2",  # unknown kind
    f"{T},0,7,1.0,net,2,9",  # a field too many
    f"{T},0,8,1.0",  # too few
    f"{T},net,9,1.0,net,2",  # a kind name in a numeric column
    f"{T},0,1_0,1.0,net,2",  # Python would read 1_0 as 10; numpy does not
    f"{T},0,11,,net,2",  # no RTT
    "",  # a blank line
]


@pytest.mark.parametrize("bad", BAD_RTT_ROWS)
def test_a_bad_rtt_row_is_left_out_and_counted(tmp_path: Path, bad: str) -> None:
    d = write_valid(tmp_path / "logs")
    path = d / "client-0.rtt.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:3], bad, *lines[3:]]) + "\n")
    cols = read_rtt_csv(path)
    assert len(cols) == 6 and cols.bad_rows == {str(path): 1}
    assert cols.kind.tolist() == ["net", "net", "app", "app", "lib", "net"]


def test_bad_rows_are_counted_per_file_and_the_partial_last_line_is_not(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    other = d / "client-1.rtt.csv"
    body = [f"{T},1,{k},10.0,net,1" for k in range(3)]
    # Bad rows among good ones on both paths (the fast parser refuses the non-number and the
    # file is read again chunk by chunk), then a partial last line from a killed writer.
    other.write_text(
        ",".join(RTT_COLUMNS)
        + "\n"
        + "\n".join([body[0], "x,y", body[1], "1,2,3,4,app,z", body[2]])
        + "\n"
        + f"{T},1,9,10"
    )
    cols = read_rtt_logs(d)
    assert len(cols) == 6 + 3
    assert cols.bad_rows == {str(other): 2}
    assert read_rtt_csv(d / "client-0.rtt.csv").bad_rows == {}


def test_both_parsing_paths_read_the_same_values(tmp_path: Path) -> None:
    # A file numpy's parser takes whole and the same file with one bad row (so it is read again
    # chunk by chunk, line by line where refused) give the same good rows.
    n = 10_000
    rows = [
        f"{T + i},{i % 3},{i // 3},{i % 97}.5,{('net', 'app', 'lib')[i % 3]}," for i in range(n)
    ]
    rows = [r + ("" if r.endswith("lib,") else f"{i % 5}.25") for i, r in enumerate(rows)]
    header = ",".join(RTT_COLUMNS) + "\n"
    clean, dirty = tmp_path / "clean.rtt.csv", tmp_path / "dirty.rtt.csv"
    clean.write_text(header + "\n".join(rows) + "\n")
    dirty.write_text(header + "\n".join([*rows[:5000], "1,2,x,4,net,5", *rows[5000:]]) + "\n")
    a, b = read_rtt_csv(clean), read_rtt_csv(dirty)
    assert (a.bad_rows, b.bad_rows) == ({}, {str(dirty): 1})
    for name in (*RTT_COLUMNS, "kind_code"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def _big_rtt_file(tmp_path: Path, n: int = 200_000) -> Path:
    """A valid log directory whose client-0.rtt.csv has n rows (two players)."""
    d = write_valid(tmp_path / "logs")
    players = np.arange(n) % 2
    seqs = np.arange(n) // 2
    body = "".join(
        f"{T + i},{p},{s},{100 + i % 50}.5,net,{i % 7}.25\n"
        for i, p, s in zip(range(n), players.tolist(), seqs.tolist(), strict=True)
    )
    (d / "client-0.rtt.csv").write_text(",".join(RTT_COLUMNS) + "\n" + body)
    return d


def test_big_rtt_file_is_read_and_checked(tmp_path: Path) -> None:
    d = _big_rtt_file(tmp_path)
    assert len(read_rtt_csv(d / "client-0.rtt.csv")) == 200_000
    assert check_log_dir(d) == []


@pytest.mark.perf
def test_big_rtt_file_is_read_and_checked_quickly(tmp_path: Path) -> None:
    d = _big_rtt_file(tmp_path)
    t0 = time.perf_counter()
    read_rtt_csv(d / "client-0.rtt.csv")
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    check_log_dir(d)
    check_s = time.perf_counter() - t0
    assert read_s < 1.5 and check_s < 4.0, (read_s, check_s)


def test_timestamps_in_microseconds_are_named_not_accepted(tmp_path: Path) -> None:
    """Rows and meta.json written consistently in µs agree with each other; only the clock
    shows the unit. The run would be ok with no row inside the harness's window."""
    d = write_valid(tmp_path / "logs")
    for name in ("server.meta.json", "client-0.meta.json"):
        patch_meta(d / name, start_unix_ns=START_NS // 1000, end_unix_ns=END_NS // 1000)
    found = [str(v) for v in check_log_dir(d)]
    unit = [v for v in found if "expected nanoseconds since the Unix epoch" in v]
    assert len(unit) == 4, found  # start and end of both processes
    assert any("'start_unix_ns'" in v and "years from when the file was written" in v for v in unit)
    # The rows, in ns, then sit decades after the (µs) lifetime: no longer checked against it,
    # the unit is the one cause named.
    assert not [v for v in found if "after the process ended" in v], found


def _events(d: Path, rows: list[str]) -> None:
    (d / "client-0.events.csv").write_text("\n".join([",".join(EVENTS_COLUMNS), *rows]) + "\n")


def _messages(violations: list[Violation]) -> str:
    return "\n".join(map(str, violations))


def test_active_blocks_go_on_the_players_tower(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    patch_meta(d / "client-0.meta.json", workload="active", params={"blocks": "3"})
    # Player 33 spawns at (-30, 0, -30): its n-th block at (-30, n, -30).
    tower = [f"{T + i},33,block_place,{i},x=-30 y={i} z=-30" for i in range(3)]
    patch_meta(d / "client-0.meta.json", args=["proto", "-role", "client", "-players", "40"])
    _events(d, tower)
    assert check_log_dir(d) == []
    _events(d, [*tower[:2], f"{T + 2},33,block_place,2,x=-30 y=5 z=-30"])
    violations = check_log_dir(d)
    assert any(
        v.line == 4
        and "player 33 placed a block at x=-30 y=5 z=-30, expected x=-30 y=2 z=-30" in v.message
        for v in violations
    ), _messages(violations)


def test_rpc_toggle_places_and_removes_beside_the_spawn_point_in_turn(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    patch_meta(d / "client-0.meta.json", workload="rpc-toggle", params={"interval": "0.2"})
    toggles = [
        f"{T},1,block_place,0,x=-29 y=0 z=-32",
        f"{T + 1},1,block_remove,1,x=-29 y=0 z=-32",
        f"{T + 2},1,block_place,2,x=-29 y=0 z=-32",
    ]
    _events(d, toggles)
    assert check_log_dir(d) == []
    _events(d, [*toggles, f"{T + 3},1,block_place,3,x=-30 y=0 z=-32"])
    found = _messages(check_log_dir(d))
    assert "client-0.events.csv:5: player 1 logged block_place twice in a row" in found, found
    assert "expected x=-29 y=0 z=-32: its spot 1 m beside its spawn point" in found, found


def _pingpong(d: Path, rows: list[tuple[int, int, int, str]], count: int = 1000) -> None:
    """Net rows (player, seq, send offset in ns, send_late_us) of 100 µs round trips."""
    patch_meta(d / "client-0.meta.json", workload="pingpong", params={"count": str(count)})
    lines = [f"{T + t},{p},{seq},100,net,{late}" for p, seq, t, late in rows]
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *lines]) + "\n")


def test_pingpong_rows_follow_its_rules(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    # The next probe 50 µs after each echo.
    chain = [(0, k, k * 150_000, "") for k in range(20)]
    _pingpong(d, chain)
    assert check_log_dir(d) == []

    _pingpong(d, [*chain[:5], (0, 5, 5 * 150_000, "3.5"), *chain[6:]])
    found = _messages(check_log_dir(d))
    assert "client-0.rtt.csv:7: 1 net row(s) of the pingpong workload have a send_late_us" in found

    _pingpong(d, chain, count=10)
    assert "player 0 has 20 pingpong net rows, more than count=10" in _messages(check_log_dir(d))

    # seq 3 leaves 40 µs after seq 2, whose echo took 100 µs: two probes in flight.
    early = [*chain[:3], (0, 3, 2 * 150_000 + 40_000, ""), *chain[4:]]
    _pingpong(d, early)
    # 60 µs early: within the clocks' slack
    assert "player 0's probe seq 3 went out" not in _messages(check_log_dir(d))
    patch_meta(d / "client-0.meta.json", workload="pingpong", params={})
    rows = [f"{T},0,0,2000,net,", f"{T + 40_000},0,1,2000,net,"]  # 2 ms round trips
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rows]) + "\n")
    found = _messages(check_log_dir(d))
    assert "client-0.rtt.csv:3: player 0's probe seq 1 went out 2.0 ms before the echo" in found

    # A sender on a 10 Hz timer: the next probe 100 ms after the last, not at its echo.
    _pingpong(d, [(0, k, k * 100_000_000, "") for k in range(20)])
    found = _messages(check_log_dir(d))
    assert "sent its next pingpong probe a median 99.9 ms after the echo" in found, found


def test_every_echo_is_counted_by_the_server(tmp_path: Path) -> None:
    d = write_valid(tmp_path / "logs")
    # 300 echoes over 3 s; the server's rows over 3.5 s count 4 messages each way per tick.
    rows = [f"{T + k * 10_000_000},0,{k},100,net," for k in range(300)]
    (d / "client-0.rtt.csv").write_text("\n".join([",".join(RTT_COLUMNS), *rows]) + "\n")

    def ticks(msgs: int) -> None:
        lines = [
            f"{T + i * 16_666_667},{i},12.345,80.5,2,2,{msgs},{msgs},400,400" for i in range(210)
        ]
        (d / "server.ticks.csv").write_text("\n".join([",".join(TICKS_COLUMNS), *lines]) + "\n")

    ticks(2)  # 420 in, 420 out
    assert check_log_dir(d) == []
    ticks(1)  # 210 each way, fewer than the 300 echoes
    found = _messages(check_log_dir(d))
    assert "msgs_in adds up to 210 over all rows, fewer than the 300 probe echoes" in found, found
    # A server killed before its end may not have written its last counts: not judged.
    patch_meta(d / "server.meta.json", status="running", end_unix_ns=None, exit_code=None)
    assert "probe echoes" not in _messages(check_log_dir(d))


# Odd spellings of numbers and kinds: whichever path reads a file (polars' reader, or numpy's
# where polars refuses it), the rows kept, their values and the bad-row count are the same.
_ODD_FLOATS = ["1.5", "-0.5", "nan", "NaN", "inf", "1e3", "1E3", "+1.5", ".5", "5.", "0x10",
               " 1.5", "1.5e", "1_0"]  # fmt: skip
_ODD_INTS = ["+5", "-5", "05", "5.0", "1e3", " 5", "9223372036854775807", "9223372036854775808"]
_ODD_ROWS = (
    [f"{T},0,1,{v},net,2" for v in _ODD_FLOATS]
    + [f"{T},0,1,3.0,net,{v}" for v in _ODD_FLOATS]
    + [f"{T},{v},1,1.0,net,2" for v in _ODD_INTS]
    + [f"{T},0,1,1.0,{k},2" for k in ("NET", "net ", "ne", "lib")]
)


@pytest.mark.parametrize("row", _ODD_ROWS)
def test_both_readers_keep_and_count_the_same_rows(
    tmp_path: Path, row: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prototypes.contract import logs

    path = tmp_path / "client-0.rtt.csv"
    path.write_text(",".join(RTT_COLUMNS) + f"\n{T},0,0,1.0,net,1\n{row}\n")
    columnar = read_rtt_csv(path)
    monkeypatch.setattr(logs, "_parse_columnar", lambda body: None)
    numpy_only = read_rtt_csv(path)
    assert columnar.bad_rows == numpy_only.bad_rows
    for name in (*RTT_COLUMNS, "kind_code"):
        np.testing.assert_array_equal(getattr(columnar, name), getattr(numpy_only, name))
