"""The server's cost per application message (stats.per_message): CPU µs from the sampler's rows
nearest to the window's edges over the messages of server.ticks.csv in that same span, and
callgrind's instructions over the messages between its switches; and the runs table's columns."""

from __future__ import annotations

import json
import math
from pathlib import Path

from monitors.sampler import CSV_COLUMNS, Sample
from prototypes.contract.columns import TICKS_COLUMNS
from stats import per_message, runs_table
from stats.resources import cpu_s_nearest
from stats.window import Window

T0 = 1_700_000_000_000_000_000
S = 10**9


def _server(t_s: float, cpu_s: float, proc: str = "server") -> Sample:
    """A sampler row of proc at T0 + t_s with cumulative CPU cpu_s (split user/system)."""
    return Sample(T0 + round(t_s * S), proc, cpu_s * 0.75, cpu_s * 0.25, 0.0, 1000, 4)


def _ticks(rate_hz: float, until_s: float, msgs: int) -> list[tuple[int, int]]:
    """Rows every 1/rate_hz s from T0 up to until_s, each with msgs messages."""
    n = round(until_s * rate_hz)
    return [(T0 + round(k * S / rate_hz), msgs) for k in range(1, n + 1)]


def test_the_cpu_span_runs_between_the_samples_nearest_to_the_window_edges() -> None:
    # A 0.5 s grid offset by 0.2 s from the window: nearest to 1.0 is 1.2 (0.2 away, not 0.7's
    # 0.3), nearest to 6.0 is 6.2; the CPU grows 0.1 s per second.
    samples = [_server(0.2 + 0.5 * k, 0.1 * (0.2 + 0.5 * k)) for k in range(14)]
    samples.append(_server(3.0, 99.0, proc="client-0"))  # another tree is never read
    span = cpu_s_nearest(samples, "server", T0 + 1 * S, T0 + 6 * S)
    assert span is not None
    cpu_s, start_ns, end_ns = span
    assert (start_ns, end_ns) == (T0 + round(1.2 * S), T0 + round(6.2 * S))
    assert math.isclose(cpu_s, 0.5)
    # One sample, or none, is no span.
    assert cpu_s_nearest(samples[:1], "server", T0, T0 + 6 * S) is None
    assert cpu_s_nearest(samples, "emulator", T0, T0 + 6 * S) is None


def test_messages_are_the_rows_written_in_the_span_end_included() -> None:
    ticks = [(T0 + 1 * S, 5), (T0 + 2 * S, 7), (T0 + 3 * S, 11)]
    assert per_message.messages_between(ticks, T0 + 1 * S, T0 + 3 * S) == 18  # (1, 3]
    assert per_message.messages_between(ticks, T0, T0 + 2 * S) == 12
    assert per_message.messages_between(ticks, T0 + 4 * S, T0 + 5 * S) is None  # no row
    rows = [{"t_unix_ns": str(T0), "msgs_in": "3", "msgs_out": "4"}]
    assert per_message.tick_messages(rows) == [(T0, 7)]


def test_cpu_per_message_divides_the_span_cpu_by_the_span_messages() -> None:
    # 0.05 cores for 10 s on a 0.5 s grid; 60 ticks/s of 10 messages: 600 msg/s.
    # Over any span: 0.05 s / 600 messages per second = 83.3 µs per message.
    samples = [_server(0.5 * k, 0.05 * 0.5 * k) for k in range(21)]
    ticks = _ticks(60, 10, 10)
    window = Window(T0 + round(2.1 * S), T0 + round(7.1 * S))  # nearest: 2.0 and 7.0
    got = per_message.cpu_us_per_msg(samples, ticks, window)
    assert got is not None and math.isclose(got, 0.05 * 1e6 / 600, rel_tol=1e-9)
    # No closed window, no span, or no message in it: None, never a division by zero.
    assert per_message.cpu_us_per_msg(samples, ticks, Window(None, T0 + 7 * S)) is None
    assert per_message.cpu_us_per_msg(samples[:1], ticks, window) is None
    assert per_message.cpu_us_per_msg(samples, _ticks(60, 10, 0), window) is None
    # CPU that went backwards (a tree's member lost) is no negative cost.
    back = [_server(2.0, 1.0), _server(7.0, 0.5)]
    assert per_message.cpu_us_per_msg(back, ticks, window) == 0.0


def test_instructions_per_message_count_the_messages_between_the_switches() -> None:
    ticks = _ticks(60, 10, 10)
    profiler = {"tool": "callgrind", "on_unix_ns": T0 + 2 * S, "off_unix_ns": T0 + 7 * S}
    # 5 s x 600 msg/s = 3000 messages.
    assert per_message.instr_per_msg(6_000_000, ticks, profiler) == 2000.0
    assert per_message.instr_per_msg(6_000_000, ticks, {"on_unix_ns": T0}) is None
    assert per_message.instr_per_msg(6_000_000, [], profiler) is None


def _run_dir(tmp_path: Path, *, profiler: dict[str, object] | None) -> Path:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    meta = {"window_start_unix_ns": T0 + 2 * S, "window_end_unix_ns": T0 + 7 * S}
    if profiler is not None:
        meta["server_profiler"] = profiler
    (run / "meta.json").write_text(json.dumps(meta))
    rows = [_server(0.5 * k, 0.05 * 0.5 * k) for k in range(21)]
    (run / "monitor.csv").write_text(
        ",".join(CSV_COLUMNS) + "\n" + "".join(s.csv_line() for s in rows)
    )
    ticks = (
        ",".join(TICKS_COLUMNS)
        + "\n"
        + "".join(
            f"{t},{k},0,10,20,20,4,6,100,100\n" for k, (t, _) in enumerate(_ticks(60, 10, 10), 1)
        )
    )
    (run / "logs" / "server.ticks.csv").write_text(ticks)
    return run


def test_the_runs_table_reads_ticks_once_for_players_and_messages(tmp_path: Path) -> None:
    data = runs_table.read_run_dir(_run_dir(tmp_path, profiler=None))
    assert data.players_connected is not None and data.tick_messages is not None
    assert len(data.players_connected) == len(data.tick_messages) == 600
    row = runs_table.measure(data)
    assert math.isclose(row["server_cpu_us_per_msg"], 83.333, abs_tol=1e-3)
    assert row["server_profiler"] is None
    assert row.get("server_instr_per_msg") is None


def test_the_runs_table_reads_the_callgrind_window_dump(tmp_path: Path) -> None:
    profiler = {"tool": "callgrind", "on_unix_ns": T0 + 2 * S, "off_unix_ns": T0 + 7 * S}
    run = _run_dir(tmp_path, profiler=profiler)
    (run / "server.callgrind.out.1").write_text(
        "version: 1\ndesc: Trigger: dump window\nevents: Ir\nsummary: 0\n\ntotals: 6000000\n"
    )
    (run / "server.callgrind.out").write_text(
        "version: 1\ndesc: Trigger: Program termination\nevents: Ir\nsummary: 0\ntotals: 123\n"
    )
    data = runs_table.read_run_dir(run)
    assert data.server_instructions == 6_000_000  # the window's dump alone
    row = runs_table.measure(data)
    assert row["server_instr_per_msg"] == 2000.0
    assert row["server_profiler"] == "callgrind"


def test_a_callgrind_run_without_its_dump_names_the_file_it_lacks(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, profiler={"tool": "callgrind"})
    data = runs_table.read_run_dir(run)
    assert data.server_instructions is None
    assert any("server.callgrind.out" in path for path in data.unread)
