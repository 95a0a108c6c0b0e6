"""Netstick.Core (prototypes/unity, the contract in C#) against the Python side of the contract.

`make test-csharp` runs the core's own NUnit tests; this test holds the C# writers to the
project's readers: a small C# program compiled against the core's sources prints the NETSTICK
lines and the CSV headers, and writes a server's and a client's whole log directory (under the
de-DE culture, whose decimal comma would break every CSV row), which `prototypes/contract`'s
grammar, columns and log checker must accept as they are.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from prototypes.contract import columns, lines
from prototypes.contract.checklogs import check_log_dir
from prototypes.contract.logs import read_events_csv, read_rtt_csv, read_ticks_csv

from support.paths import REPO

CORE = REPO / "prototypes" / "unity" / "Netstick.Core"

PROGRAM = r"""
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Threading;
using Netstick.Core;

public static class Probe
{
    public static int Main(string[] argv)
    {
        if (argv[0] == "spam")
        {
            return Spam(argv[1]);
        }
        Thread.CurrentThread.CurrentCulture = new CultureInfo("de-DE");
        if ((1.5).ToString(CultureInfo.CurrentCulture) != "1,5")
        {
            Console.Error.WriteLine("the de-DE culture does not write a decimal comma here");
            return 3;
        }
        string dir = argv[0];
        Console.WriteLine("HEADER rtt " + RttLog.Columns);
        Console.WriteLine("HEADER events " + EventLog.Columns);
        Console.WriteLine("HEADER ticks " + TickLog.Columns);
        Console.WriteLine(Lines.Ready("udp", "127.0.0.1:7777", 4242));
        Console.WriteLine(Lines.Ready("kcp", "0.0.0.0", 65535, 1));
        foreach (double s in new[] { 0.0, 0.00004, 0.51249, 1234.5, 1e-12 })
        {
            Console.WriteLine(Lines.Connected(200, 100, s));
        }

        var spec = new OptionsSpec("mono", "udp", "udp");
        var channels = new Dictionary<string, string> { { "reliable", "reliable" },
            { "unreliable", "reliable (the transport has no unreliable mode)" } };
        var versions = new Dictionary<string, string> { { "mono", "6.8" } };
        LineLog.EnsureDirectory(dir);

        Options srv = Options.Parse(new[] { "netstick-mono", "-role", "server", "-log-dir", dir,
            "-tick-rate", "20", "-seed", "3" }, spec);
        MetaFile sm = MetaFile.Create(dir, srv.Proc);
        sm.WriteStart(srv, "mono", versions, channels);
        long t0 = Clock.WallNs();
        using (EventLog ev = EventLog.Create(dir, srv.Proc))
        using (TickLog ticks = TickLog.Create(dir))
        {
            ev.Write(t0, null, "listen", "", "addr=127.0.0.1:7777");
            ev.Write(t0 + 1000, 100, "join", "", "remote=127.0.0.1:40000");
            ev.Write(t0 + 2000, 101, "join", "", "remote=127.0.0.1:40001");
            for (int i = 0; i < 5; i++)
            {
                ticks.Write(t0 + 50000000L * i, i, 12.25, 80.5, 2, 2, 4, 6, 72, 300);
            }
        }

        Options cl = Options.Parse(new[] { "netstick-mono", "-role", "client", "-log-dir", dir,
            "-players", "2", "-first-player", "100", "-workload", "stream",
            "-param", "rate=10" }, spec);
        MetaFile cm = MetaFile.Create(dir, cl.Proc);
        cm.WriteStart(cl, "mono", versions, channels);
        using (RttLog rtt = RttLog.Create(dir, cl.Proc))
        using (EventLog ev = EventLog.Create(dir, cl.Proc))
        {
            for (int p = 100; p < 102; p++)
            {
                ev.Write(t0 + 10, p, "connect", EventLog.Number(1.5, 3), "");
                // Where the server spawns player p (CONTRACT.md section 4).
                string at = "x=" + (2 * (p % 32) - 32) + " y=0 z=" + (2 * (p / 32) - 32);
                ev.Write(t0 + 20, p, "spawn", "", at);
                ev.Write(t0 + 30, p, "world_loaded", EventLog.Number(0.25, 3), "objects=0 bytes=0");
                for (int s = 0; s < 3; s++)
                {
                    rtt.Write(t0 + 1000000L * s, p, s, 152.125 + s, "net", 0.5);
                }
                rtt.Write(t0 + 5, p, 0, 1234.5, "lib", null);
                ev.Write(t0 + 40, p, "probes", "3", "kind=net echoed=3 lost=0 inflight=0");
                string reason = LineLog.Sanitize("duration elapsed");
                ev.Write(t0 + 50, p, "disconnect", "", "reason=" + reason);
            }
        }
        cm.WriteExit(ExitCode.Ok, "finished");
        sm.WriteExit(ExitCode.Ok, "finished");
        return 0;
    }

    // Rows as a busy client writes them, until killed (at most 10 s).
    private static int Spam(string dir)
    {
        RttLog rtt = RttLog.Create(dir, "client-0");
        long end = Clock.MonoNs() + 10000000000L;
        for (long seq = 0; Clock.MonoNs() < end; seq++)
        {
            rtt.Write(Clock.WallNs(), (int)(seq % 50), seq, 100.0 + seq % 1000, "net", 0.125);
            if (seq % 50 == 0)
            {
                rtt.FlushIfDue();
                Thread.Sleep(1);
            }
            if (seq == 1000)
            {
                Console.WriteLine("STARTED");
                Console.Out.Flush();
            }
        }
        return 0;
    }
}
"""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not found: install Debian's mono-devel (the C# compiler and runtime)")
    return path


@pytest.fixture(scope="module")
def probe_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The core's sources and the program above, compiled into one executable."""
    mcs = _tool("mcs")
    work = tmp_path_factory.mktemp("csharp-core")
    source = work / "Probe.cs"
    source.write_text(PROGRAM)
    exe = work / "probe.exe"
    sources = sorted(str(p) for p in CORE.glob("*.cs"))
    build = subprocess.run(
        [mcs, "-langversion:7.2", "-nologo", "-target:exe", f"-out:{exe}", *sources, str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, f"mcs failed:\n{build.stdout}{build.stderr}"
    return exe


@pytest.fixture(scope="module")
def probe(probe_exe: Path) -> tuple[list[str], Path]:
    """The program's stdout lines and the log directory it wrote."""
    logs = probe_exe.parent / "logs"
    run = subprocess.run(
        [_tool("mono"), str(probe_exe), str(logs)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=probe_exe.parent,
    )
    assert run.returncode == 0, f"the C# program failed:\n{run.stdout}{run.stderr}"
    return run.stdout.splitlines(), logs


def test_headers_are_the_columns_of_columns_py(probe: tuple[list[str], Path]) -> None:
    out, _ = probe
    headers = {ln.split()[1]: ln.split()[2] for ln in out if ln.startswith("HEADER ")}
    assert headers == {kind: ",".join(cols) for kind, cols in columns.CSV_KINDS.items()}


def test_ready_and_connected_lines_parse_with_lines_py(probe: tuple[list[str], Path]) -> None:
    out, _ = probe
    ready = [ln for ln in out if ln.startswith(lines.READY_PREFIX)]
    connected = [ln for ln in out if ln.startswith(lines.CONNECTED_PREFIX)]
    assert len(ready) == 2 and len(connected) == 5
    for line in ready:
        assert lines.READY_RE.fullmatch(line), line
    assert ready[0] == lines.ready_line("udp", "127.0.0.1", 7777, 4242)
    assert lines.fields(ready[1])["addr"] == "0.0.0.0:65535"
    # lines.py writes connect_s with 4 decimals; the C# line is the same text for the same value.
    for line, seconds in zip(connected, (0.0, 0.00004, 0.51249, 1234.5, 1e-12), strict=True):
        assert lines.CONNECTED_RE.fullmatch(line), line
        assert line == lines.connected_line(200, 100, seconds)


def test_logs_written_by_the_core_pass_the_log_checker(probe: tuple[list[str], Path]) -> None:
    _, logs = probe
    assert sorted(p.name for p in logs.iterdir()) == [
        "client-100.events.csv",
        "client-100.meta.json",
        "client-100.rtt.csv",
        "server.events.csv",
        "server.meta.json",
        "server.ticks.csv",
    ]
    assert check_log_dir(logs) == []


def test_the_readers_get_the_values_back(probe: tuple[list[str], Path]) -> None:
    _, logs = probe
    rtt = read_rtt_csv(logs / "client-100.rtt.csv")
    assert len(rtt) == 8
    assert 152.125 in set(rtt.rtt_us.tolist()) and 1234.5 in set(rtt.rtt_us.tolist())
    ticks = read_ticks_csv(logs / "server.ticks.csv")
    assert [t["tick_late_us"] for t in ticks] == ["12.250"] * 5
    events = read_events_csv(logs / "client-100.events.csv")
    assert [e["value"] for e in events if e["event"] == "connect"] == ["1.500", "1.500"]
    meta = json.loads((logs / "client-100.meta.json").read_text())
    assert meta["status"] == "exited" and meta["exit_code"] == 0
    assert meta["params"] == {"channel": "reliable", "rate": "10", "size": "400"}
    assert meta["args"][:3] == ["netstick-mono", "-role", "client"]
    assert meta["proc"] == "client-100" and meta["seed"] == 1


def test_a_killed_process_leaves_whole_lines_at_most_half_a_second_behind(
    probe_exe: Path, tmp_path: Path
) -> None:
    """CONTRACT.md section 2: after SIGKILL every log holds only whole lines, at most the last
    0.5 s missing."""
    proc = subprocess.Popen(
        [_tool("mono"), str(probe_exe), "spam", str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "STARTED"
        time.sleep(1.0)
        killed_ns = time.time_ns()
        proc.kill()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    text = (tmp_path / "client-0.rtt.csv").read_text()
    assert text.endswith("\n"), f"a torn last line: {text[-80:]!r}"
    rows = text.splitlines()
    assert rows[0] == ",".join(columns.RTT_COLUMNS)
    assert len(rows) > 1001, "rows written before the kill are on disk"
    for n, row in enumerate(rows[1:], start=2):
        assert row.count(",") == 5 and row.endswith(",net,0.125"), f"line {n}: {row!r}"
    last_ns = int(rows[-1].split(",")[0])
    assert killed_ns - last_ns < 500_000_000, "more than the last 0.5 s is missing"
