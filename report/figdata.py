"""Shape the stats stage's tables into one small CSV per report figure, with its caption.

    python -m report.figdata data/results/<campaign>   ->   data/results/<campaign>/figures/

The R chunks of report/campaign.qmd only read these files and draw: every number on a figure
(interval, median, per-second value, change point) was computed by the stats stage or here, in
Python. figures/manifest.json lists every figure type the report knows, whether this campaign
can have it, why not when it cannot, its CSV files and its caption (what was measured, the
interval, how many runs). Tests compare the rendered page against this manifest.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from stats import analyse, regress, timeseries
from workflow.campaign import records

# How each metric is shown: the facet label with its unit, and the divisor from the stored unit
# (µs, bytes) to the shown one.
DISPLAY: dict[str, tuple[str, float]] = {
    "rtt_net_p50_us": ("RTT p50 (ms)", 1e3),
    "rtt_net_p95_us": ("RTT p95 (ms)", 1e3),
    "rtt_net_p99_us": ("RTT p99 (ms)", 1e3),
    "rtt_net_sd_us": ("RTT SD per second (ms)", 1e3),
    "server_cpu_cores": ("server CPU (cores)", 1.0),
    "client_cpu_cores": ("client CPU (cores)", 1.0),
    "server_rss_bytes": ("server RSS (MiB)", 2.0**20),
    "server_tx_bytes_per_s": ("server send (KiB/s)", 2.0**10),
    "server_rx_bytes_per_s": ("server receive (KiB/s)", 2.0**10),
}
MAX_TIME_CELLS = 8  # warm-up panels: more would be unreadable on one figure
SIZE_ORDER = {"S": 0, "M": 1, "L": 2, "XL": 3}


@dataclass
class Figure:
    id: str
    title: str
    expected: bool
    reason: str | None = None  # why the campaign cannot have it
    files: list[str] = field(default_factory=list)
    caption: str = ""
    runs: int = 0
    panels: int = 1  # distinct panels: the report lays out and sizes the figure by it


def _level_pct(cells: pl.DataFrame) -> int:
    return round(100 * float(cells["ci_level"][0])) if cells.height else 95


def _series(df: pl.DataFrame) -> pl.DataFrame:
    """A series label per row: transport, with the prototype in front where several are run."""
    multi = df["prototype"].n_unique() > 1 if df.height else False
    label = (
        pl.concat_str([pl.col("prototype"), pl.lit("/"), pl.col("transport")])
        if multi
        else pl.col("transport")
    )
    return df.with_columns(label.alias("series"))


def _panel(df: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """A panel label from those of keys whose values vary in df (constant ones say nothing on a
    figure of this campaign), e.g. "active · size=S"."""
    varying = [k for k in keys if k in df.columns and df[k].n_unique() > 1]
    if not varying:  # one panel: name what every cell shares
        varying = [k for k in ("workload", "params") if k in keys and k in df.columns]
    if not varying or df.height == 0:
        return df.with_columns(pl.lit("all cells").alias("panel"))
    parts = []
    for k in varying:
        col = pl.col(k).cast(pl.String)
        if k == "params":
            col = col.map_elements(analyse.params_label, return_dtype=pl.String)
        elif k == "duration_s":
            col = pl.format("{} s", col)
        elif k == "library_version":
            col = pl.format("v{}", col)
        elif k == "players":
            col = pl.format("{} players", col)
        parts.append(col)
    label = pl.concat_str(parts, separator=" · ").str.replace_all(r"( · )+$", "")
    label = label.str.replace_all(r"^( · )+", "")
    return df.with_columns(label.alias("panel"))


def _keep_groups(df: pl.DataFrame, keys: Sequence[str], column: str, least: int) -> pl.DataFrame:
    """Rows of the groups (by keys) that have at least `least` distinct values of column."""
    keys = [k for k in keys if k in df.columns]
    if not keys:
        return df if df[column].n_unique() >= least else df.clear()
    return df.filter(pl.col(column).n_unique().over(keys) >= least)


def _display(df: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """Add metric_label and y-columns in the shown unit (columns value/estimate -> y, ci_low ->
    y_low, ci_high -> y_high)."""
    labels = {m: d[0] for m, d in DISPLAY.items()}
    div = pl.col("metric").replace_strict(
        {m: d[1] for m, d in DISPLAY.items()}, default=1.0, return_dtype=pl.Float64
    )
    names = {"value": "y", "estimate": "y", "ci_low": "y_low", "ci_high": "y_high"}
    label = pl.col("metric").replace_strict(labels, default=pl.col("metric"))
    exprs = [(pl.col(c) / div).alias(names[c]) for c in columns if c in df.columns]
    return df.with_columns(label.alias("metric_label"), *exprs)


def _write(df: pl.DataFrame, out: Path, name: str) -> str:
    records.replace_atomically(out / name, df.write_csv)
    return name


def _points_and_intervals(
    fig: Figure,
    runs: pl.DataFrame,
    cell: pl.DataFrame,
    out: Path,
    what: str,
    level_pct: int,
    n_runs: int,
) -> Figure:
    """Write a figure of run points and cell intervals; its caption ends with how to read them."""
    fig.files = [_write(runs, out, f"{fig.id}.runs.csv"), _write(cell, out, f"{fig.id}.cells.csv")]
    fig.runs = n_runs
    fig.caption = (
        f"{what} Points: runs; bars: the median over runs with its {level_pct} % order-statistic "
        f"interval where there are enough runs (6 or more). {n_runs} ok runs."
    )
    return fig


def _cells_for(cells: pl.DataFrame, metrics: Sequence[str]) -> pl.DataFrame:
    sub = cells.filter(pl.col("metric").is_in(list(metrics)))
    return _display(sub, ("estimate", "ci_low", "ci_high"))


def _runs_long(ok: pl.DataFrame, metrics: Sequence[str], keys: Sequence[str]) -> pl.DataFrame:
    have = [m for m in metrics if m in ok.columns]
    return (
        ok.select(*keys, "run_id", *have)
        .unpivot(index=[*keys, "run_id"], on=have, variable_name="metric", value_name="value")
        .with_columns(pl.col("value").cast(pl.Float64))
        .drop_nulls("value")
        .pipe(_display, ("value",))
    )


PANEL_KEYS = ("workload", "params", "network_profile", "library_version", "duration_s")
ROW_KEYS = ("cell_id", "prototype", "transport", "players", *PANEL_KEYS)


def _by_players(
    fig: Figure,
    ok: pl.DataFrame,
    cells: pl.DataFrame,
    metrics: Sequence[str],
    out: Path,
    what: str,
) -> Figure:
    # Only contexts with several player counts say anything against players; if the campaign
    # has none, every cell is drawn at its one player count.
    scaled = _keep_groups(ok, PANEL_KEYS, "players", 2)
    left_out = ok["cell_id"].n_unique() - scaled["cell_id"].n_unique() if scaled.height else 0
    ok = scaled if scaled.height else ok
    keys = [k for k in ROW_KEYS if k in ok.columns]
    runs = _panel(_series(_runs_long(ok, metrics, keys)), PANEL_KEYS)
    cell = _cells_for(cells, metrics).filter(pl.col("cell_id").is_in(ok["cell_id"].to_list()))
    cell = _panel(
        _series(
            cell.join(
                ok.select("cell_id", "library_version", "duration_s").unique(),
                on="cell_id",
                how="left",
            )
        ),
        PANEL_KEYS,
    )
    fig.files = [_write(runs, out, f"{fig.id}.runs.csv"), _write(cell, out, f"{fig.id}.cells.csv")]
    fig.runs = ok.height
    fig.panels = max(1, cell["panel"].n_unique())
    with_ci = cell.filter(pl.col("ci_low").is_not_null()).height
    fig.caption = (
        f"{what} against players, per transport. Points: each run's value; line: the median "
        f"over runs; bars: its {_level_pct(cells)} % order-statistic interval "
        f"({with_ci} of {cell.height} cell values have one; fewer than 6 runs give none). "
        f"{ok.height} ok runs in {ok['cell_id'].n_unique()} cells"
        + (
            f" ({left_out} cells with a single player count are in the table only)."
            if left_out
            else "."
        )
    )
    return fig


def _idle_active(ok: pl.DataFrame, cells: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("idle-active", "Idle against active", expected=False)
    workloads = set(ok["workload"].unique().to_list()) if ok.height else set()
    if not {"idle", "active"} <= workloads:
        fig.reason = "needs both the idle and the active workload"
        return fig
    fig.expected = True
    metrics = ("rtt_net_p50_us", "server_cpu_cores")
    pair_keys = [k for k in (*ROW_KEYS, "library_version") if k not in ("cell_id", "workload")]
    subruns = _keep_groups(
        ok.filter(pl.col("workload").is_in(["idle", "active"])), pair_keys, "workload", 2
    )
    sub = _cells_for(cells, metrics).filter(pl.col("cell_id").is_in(subruns["cell_id"].to_list()))
    keys = [k for k in ROW_KEYS if k in ok.columns]
    runs = _series(_runs_long(subruns, metrics, keys))
    what = (
        "RTT p50 of the network probe and server CPU with idle players (connected, not moving) "
        "and active players, per transport and player count."
    )
    return _points_and_intervals(
        fig, runs, _series(sub), out, what, _level_pct(cells), subruns.height
    )


def _time_cells(ok: pl.DataFrame) -> list[str]:
    """At most MAX_TIME_CELLS cells: per transport and workload the one with most players."""
    best = (
        ok.sort("players", descending=True)
        .group_by(["transport", "workload", "network_profile"], maintain_order=True)
        .first()
        .sort("transport", "workload")
    )
    return best["cell_id"].head(MAX_TIME_CELLS).to_list()


def _rtt_time(ok: pl.DataFrame, series: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("rtt-time", "RTT variation over time and the warm-up cut", expected=False)
    rtt = series.filter(pl.col("metric") == "rtt_net_sd_us")
    if rtt.height == 0:
        fig.reason = "no per-second RTT series (no ok run with probe samples)"
        return fig
    fig.expected = True
    chosen = _time_cells(ok.filter(pl.col("cell_id").is_in(rtt["cell_id"].unique().to_list())))
    keys = [
        k
        for k in ("cell_id", "run_id", "transport", "players", "workload", "network_profile")
        if k in ok.columns
    ]
    meta = ok.select(*keys)
    data = _display(
        rtt.filter(pl.col("cell_id").is_in(chosen)).join(meta, on=["cell_id", "run_id"]), ("value",)
    )
    data = data.with_columns(
        pl.format(
            "{} {} p{} {}",
            pl.col("transport"),
            pl.col("workload"),
            pl.col("players"),
            pl.col("network_profile"),
        ).alias("panel")
    )
    cut_cols = [c for c in ("warmup_cut_s", "warmup_second_half", "warmup_note") if c in ok.columns]
    cuts = (
        ok.filter(pl.col("cell_id").is_in(chosen))
        .select(*keys, *cut_cols)
        .with_columns(
            pl.format(
                "{} {} p{}", pl.col("transport"), pl.col("workload"), pl.col("players")
            ).alias("panel")
        )
    )
    fig.files = [_write(data, out, f"{fig.id}.series.csv"), _write(cuts, out, f"{fig.id}.cuts.csv")]
    n_runs = cuts.height
    n_cells = ok["cell_id"].n_unique()
    which = (
        f"all {n_cells} cells"
        if len(chosen) == n_cells
        else f"{len(chosen)} of {n_cells} cells (per transport and workload the most players)"
    )
    fig.runs = n_runs
    fig.caption = (
        "Standard deviation of the network probe's RTT within each second of each run (ms), "
        "from the start of the measurement window; one line per run. Solid vertical "
        "line: the MSER-5 warm-up cut detected for that run (none drawn where the window is too "
        "short for MSER-5); dashed: Net-Celerity's fixed 5 s cut, for comparison. "
        f"{which}, {n_runs} runs."
    )
    return fig


def _world_size(ok: pl.DataFrame, cells: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("world-size", "Resource use against world size", expected=False)
    # The world workload's size is the number of networked blocks (S/M/L); other workloads' size
    # parameters (a stream's payload bytes) are not world sizes.
    sized = ok.filter((pl.col("workload") == "world") & pl.col("params").str.contains('"size"'))
    if sized.height == 0:
        fig.reason = "no world workload with a size parameter in this campaign"
        return fig
    fig.expected = True
    size = pl.col("params").str.json_path_match("$.size").alias("size")
    metrics = ("server_cpu_cores", "server_rss_bytes", "server_tx_bytes_per_s")
    keys = [k for k in ROW_KEYS if k in ok.columns]
    runs = _series(_runs_long(sized, metrics, keys)).with_columns(size)
    cell = _series(
        _cells_for(cells, metrics).filter(pl.col("cell_id").is_in(sized["cell_id"].to_list()))
    ).with_columns(size)
    order = pl.col("size").replace_strict(SIZE_ORDER, default=99, return_dtype=pl.Int64)
    runs = runs.with_columns(order.alias("size_order"))
    cell = cell.with_columns(order.alias("size_order"))
    what = (
        "Server CPU (cores), peak server RSS (MiB) and server send rate (KiB/s) against the size "
        "of the networked world, per transport."
    )
    return _points_and_intervals(fig, runs, cell, out, what, _level_pct(cells), sized.height)


def _envmod_time(ok: pl.DataFrame, series: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("envmod-time", "Environment modification over time", expected=False)
    env = ok.filter(pl.col("workload") == "envmod")
    if env.height == 0:
        fig.reason = "no environment-modification (envmod) workload in this campaign"
        return fig
    metrics = ["rtt_net_p50_us", "server_tx_bytes_per_s"]
    keys = ["cell_id", "run_id", "transport", "prototype", "players"]
    data = series.filter(pl.col("metric").is_in(metrics)).join(
        env.select(keys), on=["cell_id", "run_id"]
    )
    if data.height == 0:
        fig.reason = "no per-second series for the environment-modification runs"
        return fig
    fig.expected = True
    data = _display(_series(data), ("value",))
    # The band: median and range over the runs of a transport, per second.
    band = (
        data.group_by(["series", "metric", "metric_label", "t_s"])
        .agg(
            pl.col("y").median().alias("median"),
            pl.col("y").min().alias("low"),
            pl.col("y").max().alias("high"),
            pl.len().alias("runs"),
        )
        .sort("series", "metric", "t_s")
    )
    fig.files = [_write(data, out, f"{fig.id}.series.csv"), _write(band, out, f"{fig.id}.band.csv")]
    fig.runs = env.height
    fig.caption = (
        "Environment modification: the server places ever faster growing layers of blocks. "
        "Top: RTT p50 of the network probe per second; bottom: the server's send rate (KiB/s, "
        "its veth counters: what the players receive). Thin lines: runs; band: range over runs; "
        f"thick line: median over runs. {env.height} ok runs."
    )
    return fig


def _profiles(ok: pl.DataFrame, cells: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("profiles", "Transports under network profiles", expected=False)
    if ok.height == 0 or ok["network_profile"].n_unique() < 2:
        fig.reason = "one network profile only"
        return fig
    fig.expected = True
    metrics = ("rtt_net_p50_us", "rtt_net_p99_us")
    keys = [k for k in ROW_KEYS if k in ok.columns]
    ok = _keep_groups(
        ok, [k for k in keys if k not in ("cell_id", "network_profile")], "network_profile", 2
    )
    cells = cells.filter(pl.col("cell_id").is_in(ok["cell_id"].to_list()))
    runs = _panel(_series(_runs_long(ok, metrics, keys)), ("players", "workload", "params"))
    cell = _panel(_series(_cells_for(cells, metrics)), ("players", "workload", "params"))
    what = (
        "RTT p50 and p99 of the network probe per transport under each network profile "
        "(emulated in user space: delay, jitter, loss)."
    )
    return _points_and_intervals(fig, runs, cell, out, what, _level_pct(cells), ok.height)


def _versions(ok: pl.DataFrame, cells: pl.DataFrame, out: Path) -> Figure:
    fig = Figure("versions", "Per-version trends and change points", expected=False)
    keys = ["prototype", "transport", "players", "workload", "params", "network_profile"]
    # "pinned" names whatever version the lock files hold: it has no place in a version order.
    ok = ok.filter(pl.col("library_version") != "pinned")
    if ok.height == 0 or _keep_groups(ok, keys, "library_version", 2).height == 0:
        fig.reason = (
            "no cell was run with several library versions "
            "(only the pinned versions can be built here)"
        )
        return fig
    fig.expected = True
    metric = "rtt_net_p50_us"
    keys = ["prototype", "transport", "players", "workload", "params", "network_profile"]
    cell = _cells_for(cells, [metric]).select("cell_id", "estimate", "ci_low", "ci_high", "n_runs")
    version_of = ok.select("cell_id", "library_version").unique()
    cell = cell.join(version_of, on="cell_id")
    ctx = ok.select("cell_id", *keys).unique()
    cell = _keep_groups(cell.join(ctx, on="cell_id"), keys, "library_version", 2)
    versions = sorted(cell["library_version"].unique().to_list(), key=_version_key)
    order = {v: i for i, v in enumerate(versions)}
    cell = cell.with_columns(
        pl.col("library_version")
        .replace_strict(order, return_dtype=pl.Int64)
        .alias("version_order")
    )
    rows = []
    for _, g in cell.group_by(keys, maintain_order=True):
        g = g.sort("version_order")
        cps = regress.detect_change_points(g["estimate"].to_numpy())
        flags = np.zeros(g.height, dtype=bool)
        flags[cps.indices] = True
        rows.append(
            g.with_columns(pl.Series("change_point", flags), pl.lit(cps.note).alias("cp_note"))
        )
    data = _panel(_series(pl.concat(rows)), ("players", "workload", "params", "network_profile"))
    data = _display(
        data.with_columns(pl.lit(metric).alias("metric")), ("estimate", "ci_low", "ci_high")
    )
    fig.files = [_write(data, out, f"{fig.id}.cells.csv")]
    fig.runs = ok.height
    n_cp = int(data["change_point"].sum())
    fig.caption = (
        "RTT p50 of the network probe per library version (in version order), median over runs "
        f"with its {_level_pct(cells)} % order-statistic interval; red: change points found by "
        f"E-divisive (apache-otava) on the series of cell medians ({n_cp} found). "
        f"{ok.height} ok runs over {ok['library_version'].n_unique()} versions."
    )
    return fig


def _version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order: 1.9 before 1.10, nightly-2026-01-02 before nightly-2026-01-10."""
    parts = re.findall(r"\d+|[^\d]+", version)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def warmup_table(ok: pl.DataFrame) -> pl.DataFrame:
    """Per cell: the MSER-5 cuts of its runs, and every run that did not settle, by name."""
    if "warmup_cut_s" not in ok.columns:  # no ok run had samples: the same columns, empty cuts
        ok = ok.with_columns(pl.lit(None, pl.Float64).alias("warmup_cut_s"))
    flag = (
        pl.col("warmup_second_half").fill_null(False)
        if "warmup_second_half" in ok.columns
        else pl.lit(False)
    )
    note = pl.col("warmup_note") if "warmup_note" in ok.columns else pl.lit(None, pl.String)
    return (
        ok.with_columns(flag.alias("_flag"), note.cast(pl.String).alias("_note"))
        .group_by("cell_id", maintain_order=True)
        .agg(
            pl.len().alias("runs"),
            pl.col("warmup_cut_s").median().alias("cut_median_s"),
            pl.col("warmup_cut_s").min().alias("cut_min_s"),
            pl.col("warmup_cut_s").max().alias("cut_max_s"),
            pl.col("run_id").filter(pl.col("_flag")).str.join(" ").alias("not_settled"),
            pl.col("_note").drop_nulls().unique().sort().str.join("; ").alias("notes"),
        )
        .sort("cell_id")
    )


def shape(results: Path) -> list[Figure]:
    """Write results/figures/*.csv and manifest.json; return the manifest's figures."""
    out = results / "figures"
    out.mkdir(parents=True, exist_ok=True)
    runs = pl.read_parquet(results / "runs.parquet")
    cells = pl.read_parquet(results / "cells.parquet")
    ts_path = results / "timeseries.parquet"
    series = (
        pl.read_parquet(ts_path) if ts_path.is_file() else pl.DataFrame(schema=timeseries.SCHEMA)
    )
    ok = runs.filter(pl.col("status") == "ok")
    figs: list[Figure] = []
    by_players = (
        ("rtt-players", "RTT against players", ("rtt_net_p50_us", "rtt_net_p99_us"),
         "RTT p50 and p99 of the uniform network probe (ms, log scale; dashed: the papers' "
         "50, 75 and 100 ms thresholds)"),
        ("resources-players", "Server CPU and memory against players",
         ("server_cpu_cores", "server_rss_bytes"),
         "Server CPU (cores, mean over the window) and peak server RSS (MiB)"),
        ("rates-players", "Send and receive rates against players",
         ("server_tx_bytes_per_s", "server_rx_bytes_per_s"),
         "Server send and receive rates (KiB/s, the server's own veth counters)"),
    )  # fmt: skip
    for fid, title, metrics, what in by_players:
        fig = Figure(fid, title, expected=False)
        have = [m for m in metrics if m in ok.columns and ok[m].drop_nulls().len()]
        if ok.height == 0 or not have:
            fig.reason = "no ok run measured " + " or ".join(metrics)
        else:
            fig.expected = True
            fig = _by_players(fig, ok, cells, have, out, what)
        figs.append(fig)
    figs.append(_idle_active(ok, cells, out))
    figs.append(_rtt_time(ok, series, out))
    figs.append(_world_size(ok, cells, out))
    figs.append(_envmod_time(ok, series, out))
    figs.append(_profiles(ok, cells, out))
    figs.append(_versions(ok, cells, out))
    _write(warmup_table(ok), out, "warmup.csv")
    doc = {"figures": [asdict(f) for f in figs]}
    records.write_text(out / "manifest.json", json.dumps(doc, indent=2) + "\n")
    return figs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m report.figdata", description=__doc__)
    ap.add_argument("results", type=Path, help="data/results/<campaign> (stats stage output)")
    args = ap.parse_args(argv)
    for name in ("runs.parquet", "cells.parquet"):
        if not (args.results / name).is_file():
            ap.error(f"{args.results / name}: missing; run the stats stage first")
    for f in shape(args.results):
        print(f"{f.id}: " + ("drawn" if f.expected else f"not drawn: {f.reason}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
