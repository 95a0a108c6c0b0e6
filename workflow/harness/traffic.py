"""A run's network traffic as evidence: the server's counters during the run, and its totals.

In the sandbox each side's veth carries the run's frames alone, so their counters read before
and after are the run's traffic exactly. Without isolation every NIC of the machine is counted,
and the idle traffic measured before the run is subtracted (approximate, flagged when within
noise). Counters are evidence only: failing to read them never fails the run.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from monitors import netcounters
from workflow.harness.state import Run


def start_net_monitor(run: Run, isolated: bool, server_pid: int) -> Any:
    """Start sampling net.csv: the server's veth in the sandbox, else every NIC."""
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


def measure_idle_baseline(run: Run) -> None:
    """Without isolation: idle traffic of every NIC before the run, and the starting counters."""
    seconds = run.cell.get("baseline_s", 0)
    if seconds > 0:
        run.baseline = netcounters.measure_baseline(seconds, min(0.25, seconds))
        run.meta["idle_baseline"] = {k: _as_dict(v) for k, v in run.baseline.items()}
    run.host_start = (time.monotonic(), netcounters.read_counters())


def host_traffic(run: Run) -> None:
    """Without isolation: each NIC's traffic during the run, minus the idle baseline."""
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


def sandbox_counters(run: Run) -> dict[str, dict[str, int]] | None:
    """Counters of the server's and the players' veth, read inside their namespaces."""
    sb = run.sandbox
    try:
        server = netcounters.read_counters(None, sb.server_ns)[sb.server_iface]
        client = netcounters.read_counters(None, sb.client_ns)[sb.client_iface]
    except Exception:  # counters are evidence, not a reason to lose the run
        return None
    return {"server": _as_dict(server), "client": _as_dict(client)}


def sandbox_totals(run: Run) -> None:
    """Whole-run traffic on each side's veth (every frame of the run, exactly), from the
    counters read when the sandbox opened."""
    start = run.meta.pop("net_start", None)
    end = sandbox_counters(run) if start is not None else None
    if start is not None and end is not None:
        run.meta["net_totals"] = {
            side: {k: end[side][k] - start[side][k] for k in end[side]} for side in end
        }


def _as_dict(obj: Any) -> dict[str, Any]:
    """A dataclass (counters, baselines, corrected rows) as a JSON-ready dict."""
    if isinstance(obj, dict):
        return dict(obj)
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
