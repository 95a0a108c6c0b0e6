"""The machine's floor for a prototype's work, measured beside a benchmark (issue: the
instrument's own cost): udp_floor.c does what a player and the server do for one probe with
nothing but the system calls, so a prototype's figures can be given as a ratio to it.

    cpu_floor(...)       CPU per UDP round trip with one system call per datagram, both halves
                         in one process (so a client's share is half of it): players per client
                         core at the stream's rate, were a client nothing but its probes
    pingpong_floor(...)  the round trip of a two-process UDP ping-pong on loopback, p50 and p99,
                         and the sender's CPU per round trip there: the two-process floor, where
                         every datagram wakes a sleeping peer and the sender sleeps for the echo
                         (what a client with its server in another process pays per probe, but
                         with nothing batched: one wake-up per round trip)

The program is compiled with the system's C compiler into a temporary directory each time
(under a second); a machine without one gets FloorError saying so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).with_name("udp_floor.c")
RUN_TIMEOUT_S = 120


class FloorError(RuntimeError):
    """The floor could not be measured (no compiler, a failed system call); says why."""


def _run(binary: Path, args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [str(binary), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise FloorError(f"udp_floor {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def measure(
    *, pairs: int = 100, rounds: int = 500, size: int = 100, rate_hz: float = 60.0,
    count: int = 20000, cpus: tuple[int, int] = (0, 1),
) -> dict[str, Any]:  # fmt: skip
    """Both floors: CPU per round trip (and the players per client core it allows at rate_hz)
    and the ping-pong round trip, with the settings they were measured with."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise FloorError("no C compiler (cc or gcc) to build udp_floor.c")
    with tempfile.TemporaryDirectory(prefix="netstick-floor-") as tmp:
        binary = Path(tmp) / "udp_floor"
        built = subprocess.run(
            [compiler, "-O2", "-o", str(binary), str(SOURCE)], capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        if built.returncode != 0:
            raise FloorError(f"{compiler} udp_floor.c: {built.stderr.strip()[-400:]}")
        cpu = _run(binary, ["cpu", str(pairs), str(rounds), str(size)])
        ping = _run(binary, ["pingpong", str(count), str(size), str(cpus[0]), str(cpus[1])])
    client_us = cpu["cpu_us_per_round_trip"] / 2  # the player's half: its send and its receive
    sender_us = ping["sender_cpu_us_per_round_trip"]
    return {
        "cpu_us_per_round_trip": cpu["cpu_us_per_round_trip"],
        "players_per_client_core": round(1e6 / (client_us * rate_hz), 1),
        "pingpong_rtt_p50_us": ping["rtt_p50_us"],
        "pingpong_rtt_p99_us": ping["rtt_p99_us"],
        "pingpong_sender_cpu_us_per_round_trip": sender_us,
        "players_per_client_core_two_process": round(1e6 / (sender_us * rate_hz), 1),
        "settings": {
            "pairs": pairs,
            "rounds": rounds,
            "size_bytes": size,
            "rate_hz": rate_hz,
            "pingpong_round_trips": count,
            "pingpong_cpus": list(cpus),
        },
    }
