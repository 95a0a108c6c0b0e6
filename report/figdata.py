"""Shape the stats stage's tables into one small CSV per report figure, with its caption.

    netstick report CAMPAIGN --step figures   ->   data/results/<campaign>/figures/

The R chunks of report/campaign.qmd only read these files and print or draw them: every number
on a figure (interval, median, per-second value, change point) was computed by the stats stage
(runs, cells, timeseries, changepoints, metrics.json) and is converted to its shown unit here,
through report/sentences.py. figures/manifest.json lists every figure type the report knows,
whether this campaign can have it, why not when it cannot, its CSV files and its caption (what
was measured, the interval, how many runs). Tests compare the rendered page against this
manifest. Beside the figures: findings.md (every finding's sentence, grouped), cells-table.csv
(the cells table in shown units), warmup.csv, failed-runs.csv (every run that failed or never
ran, with its cause) and interfered-runs.csv (every ok run measured beside a busy neighbour).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from report import sentences
from workflow.files import read_json, replace_atomically, write_json, write_text

MAX_TIME_CELLS = 8  # warm-up panels: more would be unreadable on one figure
SIZE_ORDER = {"S": 0, "M": 1, "L": 2, "XL": 3}
# The metrics of the cells table, in its column order.
TABLE_METRICS = (
    "rtt_net_p50_us", "rtt_net_p99_us", "server_cpu_cores", "server_cpu_us_per_msg",
    "server_rss_bytes", "server_instr_per_msg",
)  # fmt: skip
# Shown only where a cell measured them (callgrind runs only).
TABLE_METRICS_IF_MEASURED = ("server_instr_per_msg",)
# The metrics whose detectable change the cells table states (those the nightly decides on).
DETECTABLE_METRICS = ("rtt_net_p50_us", "server_cpu_cores", "server_instr_per_msg")
CAUSE_SEPARATOR = " · "  # between a cause's stderr lines, in one table cell
# The runs table's failure columns (stats.tables.RUNS); results written before they existed
# lack them.
FAILURE_COLUMNS = {
    "reason": pl.String,
    "exit_code": pl.Int64,
    "attempts": pl.Int64,
    "stderr_tail": pl.String,
    "failure_summary": pl.String,
}


@dataclass(frozen=True)
class Display:
    """How each metric is shown (from the stats stage's metrics.json): its label with the shown
    unit, its divisor from the stored unit, and its plain label and shown unit."""

    labels: dict[str, str]
    divisors: dict[str, float]
    names: dict[str, str]
    units: dict[str, str]
    thresholds_us: tuple[float, ...]

    @classmethod
    def read(cls, path: Path) -> Display:
        doc = read_json(path)
        if doc is None:
            raise ValueError(f"{path}: missing or not a JSON object; run the stats stage first")
        labels, divisors, names, units = {}, {}, {}, {}
        # Series labels first: a metric of both lists is labelled as a cell metric.
        for m in [*doc.get("series", []), *doc.get("metrics", [])]:
            shown, divisor = sentences.SHOWN[m["unit"]]
            labels[m["name"]] = f"{m['label']} ({shown})"
            divisors[m["name"]] = divisor
            names[m["name"]] = m["label"]
            units[m["name"]] = shown
        return cls(labels, divisors, names, units, tuple(doc.get("thresholds_us", ())))


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
    lines: list[float] = field(default_factory=list)  # horizontal reference lines (shown unit)


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
            col = col.map_elements(sentences.params_label, return_dtype=pl.String)
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


def _display(df: pl.DataFrame, disp: Display, columns: Sequence[str]) -> pl.DataFrame:
    """Add metric_label and y-columns in the shown unit (columns value/estimate -> y, ci_low ->
    y_low, ci_high -> y_high)."""
    div = pl.col("metric").replace_strict(disp.divisors, default=1.0, return_dtype=pl.Float64)
    names = {"value": "y", "estimate": "y", "ci_low": "y_low", "ci_high": "y_high"}
    label = pl.col("metric").replace_strict(disp.labels, default=pl.col("metric"))
    exprs = [(pl.col(c) / div).alias(names[c]) for c in columns if c in df.columns]
    return df.with_columns(label.alias("metric_label"), *exprs)


def _write(df: pl.DataFrame, out: Path, name: str) -> str:
    replace_atomically(out / name, df.write_csv)
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
    """Rows of the cells table (already in shown units, see shape) for these metrics."""
    return cells.filter(pl.col("metric").is_in(list(metrics)))


def _runs_long(
    ok: pl.DataFrame, metrics: Sequence[str], keys: Sequence[str], disp: Display
) -> pl.DataFrame:
    have = [m for m in metrics if m in ok.columns]
    return (
        ok.select(*keys, "run_id", *have)
        .unpivot(index=[*keys, "run_id"], on=have, variable_name="metric", value_name="value")
        .with_columns(pl.col("value").cast(pl.Float64))
        .drop_nulls("value")
        .pipe(_display, disp, ("value",))
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
    disp: Display,
) -> Figure:
    # Only contexts with several player counts say anything against players; if the campaign
    # has none, every cell is drawn at its one player count.
    scaled = _keep_groups(ok, PANEL_KEYS, "players", 2)
    left_out = ok["cell_id"].n_unique() - scaled["cell_id"].n_unique() if scaled.height else 0
    ok = scaled if scaled.height else ok
    keys = [k for k in ROW_KEYS if k in ok.columns]
    runs = _panel(_series(_runs_long(ok, metrics, keys, disp)), PANEL_KEYS)
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


def _idle_active(ok: pl.DataFrame, cells: pl.DataFrame, out: Path, disp: Display) -> Figure:
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
    runs = _series(_runs_long(subruns, metrics, keys, disp))
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
    data = rtt.filter(pl.col("cell_id").is_in(chosen)).join(meta, on=["cell_id", "run_id"])
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


def _world_size(ok: pl.DataFrame, cells: pl.DataFrame, out: Path, disp: Display) -> Figure:
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
    runs = _series(_runs_long(sized, metrics, keys, disp)).with_columns(size)
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
    data = _series(data)
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


def _profiles(ok: pl.DataFrame, cells: pl.DataFrame, out: Path, disp: Display) -> Figure:
    fig = Figure("profiles", "Transports under network profiles", expected=False)
    if ok.height == 0 or ok["network_profile"].n_unique() < 2:
        fig.reason = "one network profile only"
        return fig
    metrics = ("rtt_net_p50_us", "rtt_net_p99_us")
    keys = [k for k in ROW_KEYS if k in ok.columns]
    ok = _keep_groups(
        ok, [k for k in keys if k not in ("cell_id", "network_profile")], "network_profile", 2
    )
    if ok.height == 0:  # profiles used by different cells: nothing to set side by side
        fig.reason = "no cell was measured under more than one network profile"
        return fig
    fig.expected = True
    cells = cells.filter(pl.col("cell_id").is_in(ok["cell_id"].to_list()))
    runs = _panel(_series(_runs_long(ok, metrics, keys, disp)), ("players", "workload", "params"))
    cell = _panel(_series(_cells_for(cells, metrics)), ("players", "workload", "params"))
    what = (
        "RTT p50 and p99 of the network probe per transport under each network profile "
        "(emulated in user space: delay, jitter, loss)."
    )
    return _points_and_intervals(fig, runs, cell, out, what, _level_pct(cells), ok.height)


def _versions(
    ok: pl.DataFrame, cells: pl.DataFrame, changes: pl.DataFrame, out: Path, disp: Display
) -> Figure:
    fig = Figure("versions", "Per-version trends and change points", expected=False)
    if changes.height == 0:
        fig.reason = (
            "no cell was run with several library versions "
            "(only the pinned versions can be built here)"
        )
        return fig
    fig.expected = True
    # The stats stage found the change points (changepoints.csv); here only the cells'
    # intervals are added and the units converted.
    shown = cells.select("cell_id", "metric", "y", "y_low", "y_high", "metric_label", "n_runs")
    data = changes.rename({"note": "cp_note"}).join(shown, on=["cell_id", "metric"], how="left")
    data = _panel(_series(data), ("players", "workload", "params", "network_profile"))
    fig.files = [_write(data, out, f"{fig.id}.cells.csv")]
    versioned = ok.filter(pl.col("cell_id").is_in(data["cell_id"].to_list()))
    fig.runs = versioned.height
    n_cp = int(data["change_point"].sum())
    metric = data["metric"][0]
    fig.caption = (
        f"{disp.names.get(metric, metric)} of the network probe per library version (in version "
        f"order), median over runs with its {_level_pct(cells)} % order-statistic interval; red: "
        f"change points found by E-divisive (apache-otava) on the series of cell medians "
        f"({n_cp} found). {versioned.height} ok runs over "
        f"{data['library_version'].n_unique()} versions."
    )
    return fig


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


def cells_table(cells: pl.DataFrame, disp: Display) -> tuple[pl.DataFrame, str]:
    """The report's cells table: per cell its ok/planned runs and, per TABLE_METRICS, the median
    and its interval in the shown unit (3 significant digits; "n/a" without a median, empty
    without an interval); and a sentence naming the shown units."""
    first = cells.filter(pl.col("metric") == TABLE_METRICS[0])
    table = first.select("cell_id", pl.format("{}/{}", "n_runs", "runs_planned").alias("runs"))
    measured = (
        set(cells.filter(pl.col("y").is_not_null())["metric"].to_list())
        if "y" in cells.columns
        else set()
    )
    metrics = [m for m in TABLE_METRICS if m not in TABLE_METRICS_IF_MEASURED or m in measured]
    for metric in metrics:
        name = disp.names.get(metric, metric)
        rows = {
            r["cell_id"]: r for r in cells.filter(pl.col("metric") == metric).iter_rows(named=True)
        }
        values, bounds = [], []
        for cell_id in table["cell_id"]:
            r = rows.get(cell_id) or {}
            values.append(sentences.fmt(r.get("y")))
            low = r.get("y_low")
            bounds.append(
                "" if low is None else f"[{sentences.fmt(low)}, {sentences.fmt(r.get('y_high'))}]"
            )
        table = table.with_columns(
            pl.Series(name, values, dtype=pl.String),
            pl.Series(f"{name} interval", bounds, dtype=pl.String),
        )
    # How small a change a night against a baseline of as many runs would detect, per metric
    # a nightly decides on (stats.power via the cells table's mde_ratio).
    for metric in (m for m in DETECTABLE_METRICS if m in metrics):
        mde = {
            r["cell_id"]: r.get("mde_ratio")
            for r in cells.filter(pl.col("metric") == metric).iter_rows(named=True)
        }
        detectable = [
            "" if mde.get(c) is None else f"{100 * (mde[c] - 1):.1f} %" for c in table["cell_id"]
        ]
        table = table.with_columns(
            pl.Series(f"{disp.names.get(metric, metric)} detectable change", detectable,
                      dtype=pl.String)
        )  # fmt: skip
    units = ", ".join(
        f"{disp.names.get(m, m)} in {disp.units.get(m, '(stored unit)')}" for m in metrics
    )
    return table, units


def _cause(stderr_tail: str | None, summary: str | None) -> str:
    """A failure's cause in one line: the failing process's last stderr lines, else what the
    harness saw."""
    lines = json.loads(stderr_tail) if stderr_tail else []
    return CAUSE_SEPARATOR.join(str(x) for x in lines) if lines else summary or ""


def failed_table(runs: pl.DataFrame) -> pl.DataFrame:
    """The report's failed-runs table: every run that is not ok, in the runs table's (plan)
    order, with its status, the reason, the failing process's exit code, the attempts made and
    the cause (its last stderr lines). A run not run after failed attempts shows its last
    attempt's."""
    absent = [pl.lit(None, t).alias(c) for c, t in FAILURE_COLUMNS.items() if c not in runs.columns]
    bad = runs.with_columns(absent).filter(pl.col("status") != "ok")
    causes = [
        _cause(r["stderr_tail"], r["failure_summary"])
        for r in bad.select("stderr_tail", "failure_summary").iter_rows(named=True)
    ]
    return bad.select(
        pl.format("{}/{}", "cell_id", "run_id").alias("run"),
        pl.col("status").replace({"not_run": "not run"}),
        "reason",
        "exit_code",
        "attempts",
        pl.Series("cause", causes, dtype=pl.String),
    )


INTERFERENCE_COLUMNS = {
    "interference": pl.Boolean,
    "others_cpu_cores": pl.Float64,
    "steal_cores": pl.Float64,
    "interference_reason": pl.String,
}


def interference_table(runs: pl.DataFrame) -> pl.DataFrame:
    """The report's table of ok runs measured beside a busy neighbour (stats.interference), in
    the runs table's order: what the other processes and the hypervisor took of the machine in
    the window, and the stats stage's reason."""
    absent = [
        pl.lit(None, t).alias(c) for c, t in INTERFERENCE_COLUMNS.items() if c not in runs.columns
    ]
    busy = runs.with_columns(absent).filter(
        (pl.col("status") == "ok") & pl.col("interference").fill_null(False)
    )
    return busy.select(
        pl.format("{}/{}", "cell_id", "run_id").alias("run"),
        pl.col("others_cpu_cores").round(3),
        pl.col("steal_cores").round(3),
        pl.col("interference_reason").alias("reason"),
    )


def findings_markdown(results: Path) -> str:
    """Every finding of findings.json as its sentence, grouped (report/sentences.py)."""
    doc = read_json(results / "findings.json")
    if doc is None:
        raise ValueError(f"{results / 'findings.json'}: missing or not JSON; run the stats stage")
    return sentences.markdown(doc.get("findings") or [])


def shape(results: Path) -> list[Figure]:
    """Write results/figures/*.csv, findings.md and manifest.json; return the manifest's
    figures."""
    out = results / "figures"
    out.mkdir(parents=True, exist_ok=True)
    disp = Display.read(results / "metrics.json")
    runs = pl.read_parquet(results / "runs.parquet")
    # Every stored value becomes its shown value once, here.
    cells = _display(
        pl.read_parquet(results / "cells.parquet"), disp, ("estimate", "ci_low", "ci_high")
    )
    series = _display(pl.read_parquet(results / "timeseries.parquet"), disp, ("value",))
    changes = pl.read_parquet(results / "changepoints.parquet")
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
            fig = _by_players(fig, ok, cells, have, out, what, disp)
        figs.append(fig)
    figs[0].lines = [sentences.convert(t, "us")[0] or 0.0 for t in disp.thresholds_us]
    figs.append(_idle_active(ok, cells, out, disp))
    figs.append(_rtt_time(ok, series, out))
    figs.append(_world_size(ok, cells, out, disp))
    figs.append(_envmod_time(ok, series, out))
    figs.append(_profiles(ok, cells, out, disp))
    figs.append(_versions(ok, cells, changes, out, disp))
    _write(warmup_table(ok), out, "warmup.csv")
    table, units = cells_table(cells, disp)
    _write(table, out, "cells-table.csv")
    _write(failed_table(runs), out, "failed-runs.csv")
    _write(interference_table(runs), out, "interfered-runs.csv")
    write_text(out / "findings.md", findings_markdown(results))
    doc = {
        "figures": [asdict(f) for f in figs],
        "tables": {
            "cells": {"file": "cells-table.csv", "units": units},
            "failed": {"file": "failed-runs.csv"},
            "interfered": {"file": "interfered-runs.csv"},
        },
        "findings": "findings.md",
    }
    write_json(out / "manifest.json", doc, sort_keys=False)
    return figs
