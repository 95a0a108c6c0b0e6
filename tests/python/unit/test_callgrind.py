"""The callgrind profiler's pieces that need no valgrind: its output parser, the window's dump
among a run's files, the Go environment it needs, and the cell key that asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitors import callgrind
from workflow import layout
from workflow.harness import callgrind as harness_callgrind
from workflow.harness import cell as cells

# What callgrind 3.19 wrote for a window here (trimmed): `summary: 0` over a part whose totals
# are not, once counting was switched on and off.
WINDOW_DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 16110
cmd:  netstick-ref -role server
part: 1

desc: Trigger: dump window

positions: line
events: Ir
summary: 0

ob=(1) netstick-ref
fn=(176) runtime.(*mcache).prepareForSweep
350 1430
+8 286

totals: 1117217
"""


def test_totals_are_read_and_preferred_over_a_zero_summary() -> None:
    assert callgrind.parse_instructions(WINDOW_DUMP) == 1117217


def test_the_ir_column_is_found_among_several_events_and_parts_add_up() -> None:
    first = "events: Dr Ir Dw\nsummary: 0 0 0\ntotals: 9 100 9\n"
    second = "part: 2\nevents: Dr Ir Dw\nsummary: 1 50 1\n"  # no totals: its summary counts
    assert callgrind.parse_instructions(first + second) == 150
    assert callgrind.parse_instructions("events: Ir\nsummary: 42\n") == 42


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("version: 1\n", "no `totals:` or `summary:`"),
        ("events: Dr\ntotals: 5\n", "naming Ir"),
        ("totals: 5\n", "naming Ir"),
        ("events: Ir\ntotals: 5\npart: 2\nevents: Ir\n", "no `totals:` or `summary:`"),
        ("events: Ir Dr\ntotals: x 1\n", "no Ir count"),
    ],
)
def test_output_that_is_not_callgrind_s_is_refused_naming_the_file(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=r"run/out\.1") as err:
        callgrind.parse_instructions(text, "run/out.1")
    assert says in str(err.value)


def test_the_window_dump_is_read_alone(tmp_path: Path) -> None:
    (tmp_path / "server.callgrind.out.1").write_text(WINDOW_DUMP)
    exit_dump = WINDOW_DUMP.replace("dump window", "Program termination").replace("1117217", "9")
    (tmp_path / "server.callgrind.out").write_text(exit_dump)
    (tmp_path / "server.callgrind.out.txt").write_text("not ours")  # never read
    assert callgrind.read_instructions(tmp_path) == 1117217
    (tmp_path / "server.callgrind.out.2").write_text(WINDOW_DUMP)
    with pytest.raises(ValueError, match="2 callgrind dumps of the window"):
        callgrind.read_instructions(tmp_path)


def test_a_run_without_a_window_dump_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no callgrind dump of the window"):
        callgrind.read_instructions(tmp_path)


def test_godebug_keeps_what_the_environment_set() -> None:
    assert callgrind.environment({})["GODEBUG"] == "asyncpreemptoff=1"
    env = callgrind.environment({"GODEBUG": "gctrace=1", "PATH": "/bin"})
    assert env == {"GODEBUG": "gctrace=1,asyncpreemptoff=1", "PATH": "/bin"}


def test_the_command_counts_from_the_start_into_the_run_directory(tmp_path: Path) -> None:
    argv = callgrind.command(tmp_path)
    assert argv[:2] == ["valgrind", "--tool=callgrind"]
    assert f"--callgrind-out-file={tmp_path / callgrind.OUT_FILE}" in argv


def test_a_cell_asks_for_callgrind_and_is_another_cell_than_without() -> None:
    doc = {
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": "tcp",
        "players": 5,
        "workload": "active",
        "duration_s": 3,
    }
    plain = cells.validate(doc)
    profiled = cells.validate({**doc, "server_profiler": "callgrind"})
    assert "server_profiler" not in plain  # no default: existing cells are unchanged
    assert harness_callgrind.wanted(profiled) and not harness_callgrind.wanted(plain)
    assert layout.derive_cell_id(profiled) == layout.derive_cell_id(plain) + "-callgrind"
    with pytest.raises(cells.CellError, match="server_profiler"):
        cells.validate({**doc, "server_profiler": "gprof"})
    # The CPU's own counter is the other profiler, another cell again.
    counted = cells.validate({**doc, "server_profiler": "perf"})
    assert layout.derive_cell_id(counted) == layout.derive_cell_id(plain) + "-perf"
