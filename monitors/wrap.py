"""Run a command and monitor it on the node where it runs.

    python -m monitors.wrap --name client-1 --out-dir DIR -- CMD ARGS...

Across SLURM nodes the harness cannot see the prototype's processes (psutil reads only the
local /proc), so each `srun` step starts the prototype through this wrapper: it samples the
command's process tree into DIR/monitor-<name>.csv, passes stdout and stderr through unchanged
(the harness reads the READY and CONNECTED lines), forwards SIGTERM and SIGINT to the command,
and exits with the command's exit code. Beside the tree the CSV holds the node's own host, steal
and sampler rows (read back as host@<name>, ...: read_monitor), from which the stats stage
judges what else used that node during the run (stats.interference).

Inside a SLURM job step nothing is forwarded: slurmstepd delivers a signal that srun forwards to
every process of the task, the command included, and a second copy from here could reach the
command while it is already exiting (a Python or .NET runtime that has restored the default
handler then dies of it, exit 130, instead of exiting 0 as the contract asks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from monitors.sampler import DEFAULT_INTERVAL_S, Sampler, node_csv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitors.wrap", description=__doc__)
    parser.add_argument("--name", required=True, help="process name in the CSV (e.g. server-0)")
    parser.add_argument("--out-dir", type=Path, required=True, help="where monitor-<name>.csv goes")
    parser.add_argument("--interval-s", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    child = subprocess.Popen(command)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signum)

    in_step = "SLURM_STEP_ID" in os.environ
    for sig in (signal.SIGTERM, signal.SIGINT):
        # In a step the signal reaches the command directly; here it must not end the wrapper.
        signal.signal(sig, signal.SIG_IGN if in_step else forward)
    out = node_csv(args.out_dir, args.name)
    with Sampler({args.name: child.pid}, out, args.interval_s):
        code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
