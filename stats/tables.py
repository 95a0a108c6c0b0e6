"""The samples and runs tables: every column, its type and what it holds.

stats.ingest writes Netstick's campaigns in these shapes (samples.parquet, runs.parquet and
runs.csv) and the importers (stats.importers) write earlier studies' data in the same shapes,
so the same statistics run on both. A column a source cannot fill is null, never missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

# column -> (type, what it holds)
SAMPLES: dict[str, tuple[pl.DataType, str]] = {
    "campaign": (pl.String(), "campaign name"),
    "cell_id": (pl.String(), "cell (one configuration) the run belongs to"),
    "run_id": (pl.String(), "repetition within the cell"),
    "t_unix_ns": (pl.Int64(), "when the probe was sent, ns since the Unix epoch"),
    "t_s": (pl.Float64(), "seconds since the measurement window's start (negative before it)"),
    "player": (pl.Int32(), "player (connection) that sent the probe"),
    "seq": (pl.Int64(), "probe sequence number, per player and kind"),
    "kind": (pl.String(), "probe kind: net, app or lib (CONTRACT.md section 3)"),
    "rtt_us": (pl.Float64(), "round-trip time, µs"),
    "send_late_us": (pl.Float64(), "how late the probe was sent, µs (null for lib)"),
    "source": (pl.String(), "who measured it: netstick or the imported study's name"),
}

_RTT_PERCENTILES = {
    f"rtt_{kind}_{p}_us": (pl.Float64(), f"{p} of the {kind} probe's RTT in the window, µs")
    for kind in ("net", "app", "lib")
    for p in ("p50", "p95", "p99")
}

RUNS: dict[str, tuple[pl.DataType, str]] = {
    "campaign": (pl.String(), "campaign name"),
    "cell_id": (pl.String(), "cell (one configuration) the run belongs to"),
    "run_id": (pl.String(), "repetition within the cell"),
    "block": (pl.String(), "the campaign block that planned the cell"),
    "run_order": (pl.Int64(), "position in the campaign's seeded execution order"),
    "seed": (pl.Int64(), "the run's random seed"),
    "prototype": (pl.String(), "prototype (its manifest's folder name)"),
    "library_version": (pl.String(), "netcode library version, or pinned"),
    "library": (pl.String(), "the transport's library (its manifest's transports.library)"),
    "library_release": (
        pl.String(),
        "the library version measured, pinned resolved to the manifest's version",
    ),
    "transport": (
        pl.String(),
        "transport as measured: its name, +<variant> for a named tuning (enet+merged-acks)",
    ),
    "variant": (
        pl.String(),
        "the named tuning of the transport (its manifest's transports.variants), empty: stock",
    ),
    "reliable_ordered": (
        pl.Boolean(),
        "whether the transport's reliable channel keeps order (its manifest's "
        "reliable_ordered; empty: not declared)",
    ),
    "transport_options": (pl.String(), "transport options the campaign set, JSON object"),
    "players": (pl.Int64(), "players (connections) in the run"),
    "workload": (pl.String(), "workload name"),
    "params": (pl.String(), "workload parameters, JSON object"),
    "network_profile": (pl.String(), "network profile name, or the profile as JSON"),
    "duration_s": (pl.Float64(), "planned length of the measurement window, s"),
    "tick_rate_hz": (pl.Float64(), "the server's tick rate, Hz (one frame is 1/tick_rate_hz s)"),
    "profile_rtt_us": (
        pl.Float64(),
        "the round trip the network profile adds (its two one-way delays), µs; 0 for lan",
    ),
    "rtt_source": (
        pl.String(),
        "where the RTT rows of kind net come from: probe:<hz> (the periodic net probe), stream "
        "(the stream's own echoes), pingpong, or none",
    ),
    "status": (pl.String(), "ok, failed, or not_run"),
    "reason": (
        pl.String(),
        "why the run failed (the record's reason; for a run not run after failed attempts, the "
        "last attempt's)",
    ),
    "failed_attempts": (pl.Int64(), "failed attempts kept (a failed run's last one included)"),
    "attempts": (pl.Int64(), "attempts made at the run (null for a run never attempted)"),
    "failed_process": (pl.String(), "the process whose exit or silence failed the run"),
    "exit_code": (pl.Int64(), "that process's exit code, where its exit failed the run"),
    "stderr_tail": (
        pl.String(),
        "that process's last non-empty stderr lines, a JSON list, oldest first",
    ),
    "failure_summary": (pl.String(), "what the harness saw, in one line"),
    "read_error": (pl.String(), "why part of an ok run's data could not be read"),
    "bad_rows": (pl.Int64(), "rtt.csv rows left out as unparseable, over the run's files"),
    "overhead_s": (pl.Float64(), "harness time outside the measurement window, s"),
    "host": (pl.String(), "host the run was measured on (workflow.layout.host_of)"),
    "slurm_job_id": (pl.String(), "SLURM job that ran it, if any"),
    "isolation": (pl.String(), "network isolation of the run (netns or none)"),
    "commit": (pl.String(), "git commit the run was measured at"),
    "source": (pl.String(), "who measured it: netstick or the imported study's name"),
    "flaws": (pl.String(), "known measurement flaws of the run, ';'-separated"),
    **_RTT_PERCENTILES,
    "rtt_net_samples": (pl.Int64(), "net probe samples in the window"),
    "send_late_p99_us": (pl.Float64(), "p99 of the net probe's send lateness in the window, µs"),
    "server_cpu_cores": (pl.Float64(), "server's mean CPU in the window, cores"),
    "client_cpu_cores": (pl.Float64(), "all clients' mean CPU in the window, cores"),
    "server_rss_bytes": (pl.Int64(), "server's peak resident memory, bytes"),
    "client_rss_bytes": (pl.Int64(), "sum of the client processes' peak resident memory, bytes"),
    "server_rx_bytes_per_s": (pl.Float64(), "server's received bytes over the window's length"),
    "server_tx_bytes_per_s": (pl.Float64(), "server's sent bytes over the window's length"),
    "server_rx_packets_per_s": (
        pl.Float64(),
        "packets (datagrams, segments) the server received over the window's length",
    ),
    "server_tx_packets_per_s": (
        pl.Float64(),
        "packets (datagrams, segments) the server sent over the window's length",
    ),
    "players_connected_max": (pl.Int64(), "most players the server saw connected at once"),
    "connect_s": (
        pl.Float64(),
        "seconds until every player was connected (the slowest client process's connect_s)",
    ),
    "server_cpu_us_per_msg": (
        pl.Float64(),
        "server's CPU µs per application message (msgs_in + msgs_out of server.ticks.csv) between "
        "the sampler's rows nearest the window's edges (stats.per_message)",
    ),
    "server_profiler": (
        pl.String(),
        "profiler the server ran under (callgrind: ~20-50x slower, its RTT and CPU are not an "
        "unprofiled run's; perf: the CPU's instruction counter, at full speed), null for none",
    ),
    "server_instr_per_msg": (
        pl.Float64(),
        "server's instructions per application message while callgrind or perf counted, from "
        "the window's start to its end (server_profiler callgrind or perf only)",
    ),
    "others_cpu_cores": (
        pl.Float64(),
        "mean CPU in the window of everything on the machine but the run's processes, the "
        "emulator and the sampler, cores (stats.interference; the busiest node under SLURM)",
    ),
    "steal_cores": (pl.Float64(), "mean CPU the hypervisor stole in the window, cores"),
    "interference": (
        pl.Boolean(),
        "measured beside a busy neighbour (others_cpu_cores or steal_cores above its threshold): "
        "left out of comparisons and of the nightly's decisions",
    ),
    "interference_reason": (pl.String(), "why the run is flagged interference, with the numbers"),
    "tick_gap_max_s": (
        pl.Float64(),
        "the longest time inside the window without a server tick, s (stats.stalls)",
    ),
    "probe_silence_max_s": (
        pl.Float64(),
        "the longest time inside the window without an answered net probe of any player, s",
    ),
    "stalled": (
        pl.Boolean(),
        "the server or every player stalled inside the window beyond stats.stalls.STALL_S: kept "
        "in the cells, left out of the comparisons, named",
    ),
    "stall_reason": (pl.String(), "what stalled and for how long"),
    "warmup_cut_s": (pl.Float64(), "MSER-5 warm-up cut, s after the window's start"),
    "warmup_second_half": (pl.Boolean(), "MSER-5's minimum lay in the second half: unsettled"),
    "warmup_note": (pl.String(), "why the cut is 0 or doubtful, or how gaps were handled"),
    "warmup_fixed_cut_s": (pl.Float64(), "Net-Celerity's fixed warm-up cut, s"),
    "rtt_net_p50_after_mser_us": (pl.Float64(), "net RTT p50 in the window after the MSER-5 cut"),
    "rtt_net_p50_after_fixed_cut_us": (
        pl.Float64(),
        "net RTT p50 in the window after the fixed cut",
    ),
}

SAMPLES_SCHEMA: dict[str, pl.DataType] = {name: t for name, (t, _) in SAMPLES.items()}
RUNS_SCHEMA: dict[str, pl.DataType] = {name: t for name, (t, _) in RUNS.items()}


def rows_frame(
    rows: Iterable[Mapping[str, Any]], schema: Mapping[str, pl.DataType] = RUNS_SCHEMA
) -> pl.DataFrame:
    """A DataFrame of dict rows with exactly the schema's columns (missing keys are null).

    A key the schema does not know is an error naming it: a value computed but never written
    would be a silent loss.
    """
    rows = list(rows)
    unknown = sorted({k for r in rows for k in r} - set(schema))
    if unknown:
        raise KeyError(f"columns {unknown} are not in the table schema (stats/tables.py)")
    data = {name: [r.get(name) for r in rows] for name in schema}
    return pl.DataFrame(data, schema=dict(schema))


def empty(schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=dict(schema))
