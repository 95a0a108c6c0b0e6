"""Per-second series of one run: RTT, server CPU and memory, and exact server traffic.

The report draws what happens during a run (warm-up, an environment filling with blocks) from
these series, so they are computed once here and never in R. One long table per campaign,
data/results/<campaign>/timeseries.parquet:

    campaign, cell_id, run_id, t_s, metric, value

t_s is the start of a one-second bin, counted from the start of the measurement window
(stats.window): the series covers the run up to the window's end, so bins before the window,
such as the join phase, have negative t_s, and a bin that would reach past the window's end is
left out (Window.bin_ends_by_end). Metrics:

- rtt_net_p50_us, rtt_net_p95_us, rtt_net_sd_us, rtt_net_n: the uniform probe's samples sent
  in that second (their median, 95th percentile, standard deviation and count);
- server_cpu_cores: mean over the sampler's readings in the bin (each reading is the process
  tree's CPU rate over its own interval); server_rss_bytes: the largest reading in the bin;
- server_rx_bytes_per_s, server_tx_bytes_per_s: the server's own veth counters (net.csv, only
  with namespace isolation), differenced between readings; a rate is placed in the bin of its
  interval's midpoint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from monitors.sampler import Sample
from stats.window import Window

SCHEMA: dict[str, pl.DataType] = {
    "campaign": pl.String(),
    "cell_id": pl.String(),
    "run_id": pl.String(),
    "t_s": pl.Float64(),
    "metric": pl.String(),
    "value": pl.Float64(),
}
MONITOR_COLUMNS = {
    "t_unix_ns": pl.Int64,
    "proc": pl.String,
    "cpu_cores": pl.Float64,
    "rss_bytes": pl.Int64,
}
NET_COLUMNS = {"t_unix_ns": pl.Int64, "rx_bytes": pl.Int64, "tx_bytes": pl.Int64}
SERVER_IFACE_SUFFIX = "-s0"  # the server namespace's end of its veth pair (harness naming)


def _long(wide: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    if wide.height == 0:
        return pl.DataFrame(
            schema={"t_s": pl.Float64(), "metric": pl.String(), "value": pl.Float64()}
        )
    return (
        wide.unpivot(index="t_s", on=metrics, variable_name="metric", value_name="value")
        .with_columns(pl.col("t_s").cast(pl.Float64), pl.col("value").cast(pl.Float64))
        .drop_nulls("value")
    )


def rtt_per_second(samples: pl.DataFrame) -> pl.DataFrame:
    """Per-second RTT of the net probe from one run's samples (columns kind, t_s, rtt_us)."""
    net = samples.filter(pl.col("kind") == "net").drop_nulls("t_s")
    wide = (
        net.group_by(pl.col("t_s").floor().alias("t_s"))
        .agg(
            pl.col("rtt_us").median().alias("rtt_net_p50_us"),
            pl.col("rtt_us").quantile(0.95, "linear").alias("rtt_net_p95_us"),
            pl.col("rtt_us").std().alias("rtt_net_sd_us"),
            pl.len().alias("rtt_net_n"),
        )
        .sort("t_s")
    )
    return _long(wide, ["rtt_net_p50_us", "rtt_net_p95_us", "rtt_net_sd_us", "rtt_net_n"])


def _bin_s(t_unix_ns: pl.Expr, window_start_ns: int) -> pl.Expr:
    return ((t_unix_ns - window_start_ns) / 1e9).floor()


def server_per_second(monitor: pl.DataFrame, window_start_ns: int) -> pl.DataFrame:
    """Server CPU and RSS per second from the sampler's rows (t_unix_ns, proc, cpu_cores,
    rss_bytes)."""
    server = monitor.filter(pl.col("proc") == "server")
    wide = (
        server.group_by(_bin_s(pl.col("t_unix_ns"), window_start_ns).alias("t_s"))
        .agg(
            pl.col("cpu_cores").mean().alias("server_cpu_cores"),
            pl.col("rss_bytes").max().alias("server_rss_bytes"),
        )
        .sort("t_s")
    )
    return _long(wide, ["server_cpu_cores", "server_rss_bytes"])


def traffic_per_second(net: pl.DataFrame, window_start_ns: int) -> pl.DataFrame:
    """Server receive and send rates per second from cumulative veth counters (t_unix_ns,
    iface, rx_bytes, tx_bytes)."""
    server = net.filter(pl.col("iface").str.ends_with(SERVER_IFACE_SUFFIX)).sort("t_unix_ns")
    if server.height < 2:
        return _long(pl.DataFrame(), [])
    t = server["t_unix_ns"].to_numpy()
    dt_s = np.diff(t) / 1e9
    keep = dt_s > 0
    mid_ns = (t[:-1] + t[1:]) // 2
    rates = pl.DataFrame(
        {
            "t_unix_ns": mid_ns[keep],
            "rx": np.diff(server["rx_bytes"].to_numpy())[keep] / dt_s[keep],
            "tx": np.diff(server["tx_bytes"].to_numpy())[keep] / dt_s[keep],
        }
    )
    wide = (
        rates.group_by(_bin_s(pl.col("t_unix_ns"), window_start_ns).alias("t_s"))
        .agg(
            pl.col("rx").mean().alias("server_rx_bytes_per_s"),
            pl.col("tx").mean().alias("server_tx_bytes_per_s"),
        )
        .sort("t_s")
    )
    return _long(wide, ["server_rx_bytes_per_s", "server_tx_bytes_per_s"])


def _monitor_frame(samples: list[Sample]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "t_unix_ns": [x.t_unix_ns for x in samples],
            "proc": [x.proc for x in samples],
            "cpu_cores": [x.cpu_cores for x in samples],
            "rss_bytes": [x.rss_bytes for x in samples],
        },
        schema=MONITOR_COLUMNS,
    )


def run_series(
    run: Path,
    samples: pl.DataFrame,
    window: Window,
    ids: dict[str, str],
    monitor: list[Sample] | None = None,
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Every per-second series of one ok run in SCHEMA's shape (ids holds campaign, cell_id and
    run_id; samples has kind, t_s and rtt_us; monitor is the run's sampler rows, already read),
    and the files that could not be read with the reason (net.csv): their series are left out
    and the caller reports them, never a crash."""
    parts = [rtt_per_second(samples)]
    unread: dict[str, str] = {}
    start = window.start_unix_ns
    if start is not None:
        if monitor:
            parts.append(server_per_second(_monitor_frame(monitor), start))
        if (run / "net.csv").is_file():
            try:
                net = pl.read_csv(
                    run / "net.csv",
                    columns=["t_unix_ns", "iface", "rx_bytes", "tx_bytes"],
                    schema_overrides=NET_COLUMNS,
                )
                parts.append(traffic_per_second(net, start))
            except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
                unread[str(run / "net.csv")] = f"{type(exc).__name__}: {exc}"
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=SCHEMA), unread
    body = pl.concat(parts).filter(window.bin_ends_by_end_expr(pl.col("t_s")))
    body = body.select(
        pl.lit(ids["campaign"]).alias("campaign"),
        pl.lit(ids["cell_id"]).alias("cell_id"),
        pl.lit(ids["run_id"]).alias("run_id"),
        "t_s",
        "metric",
        "value",
    )
    return body.cast(SCHEMA), unread  # type: ignore[arg-type]
