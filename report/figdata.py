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

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from report import answer, sentences, tables
from report.display import Display
from workflow.files import read_json, replace_atomically, write_json, write_text

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
            col = (
                pl.when(pl.col(k) == 1)
                .then(pl.lit("1 player"))
                .otherwise(pl.format("{} players", col))
            )
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


def _threshold_lines(fig: Figure, out: Path, disp: Display) -> None:
    """The papers' thresholds (50, 75, 100 ms) as labelled lines, in each panel only where its
    data reach them: a line above every value would stretch the log axis and press the data
    into its bottom; the caption says what was not drawn."""
    # Typed on reading: a column of a small campaign may hold no number to infer a type from.
    num = {"y": pl.Float64, "y_high": pl.Float64}
    runs = pl.read_csv(out / f"{fig.id}.runs.csv", schema_overrides=num, infer_schema_length=None)
    cells = pl.read_csv(out / f"{fig.id}.cells.csv", schema_overrides=num, infer_schema_length=None)
    both = [
        runs.select("panel", "metric_label", "y"),
        cells.select("panel", "metric_label", pl.col("y_high").alias("y")),
    ]
    tops = (
        pl.concat(both, how="vertical_relaxed")
        .group_by("panel", "metric_label")
        .agg(pl.col("y").max().alias("top"))
    )
    ms = [sentences.convert(t, "us")[0] or 0.0 for t in disp.thresholds_us]
    lines = [
        {"panel": r["panel"], "metric_label": r["metric_label"], "y": t, "label": f"{t:g} ms"}
        for r in tops.iter_rows(named=True)
        for t in ms
        if r["top"] is not None and r["top"] >= t
    ]
    schema = {"panel": pl.String, "metric_label": pl.String, "y": pl.Float64, "label": pl.String}
    fig.files.append(_write(pl.DataFrame(lines, schema=schema), out, f"{fig.id}.lines.csv"))
    fig.lines = sorted({line["y"] for line in lines})
    shown = " and ".join(f"{t:g}" for t in ms)
    fig.caption += (
        f" Dashed: the papers' {shown} ms thresholds, in the panels whose values reach them."
        if lines
        else f" The papers' {shown} ms thresholds lie above every value: not drawn."
    )


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
        "RTT p50 and server CPU with idle players (connected, not moving) "
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
    cut = cuts.filter(pl.col("warmup_cut_s") > 0).height if "warmup_cut_s" in cuts.columns else 0
    cuts_said = (
        f"Solid vertical line: the MSER-5 warm-up cut of that run ({cut} of {n_runs} runs cut "
        "anything)"
        if cut
        else "MSER-5 cut nothing from any of these runs (no solid line: the window needed no "
        "warm-up cut, or was too short for MSER-5; the warm-up table says which)"
    )
    fig.caption = (
        "Standard deviation of the RTT within each second of each run (ms), from the start of "
        f"the measurement window; one line per run. {cuts_said}; dashed: Net-Celerity's fixed "
        f"5 s cut, for comparison. {which}, {n_runs} runs."
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
        "Top: RTT p50 per second; bottom: the server's send rate (KiB/s, "
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
        "RTT p50 and p99 per transport under each network profile "
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
        f"{disp.names.get(metric, metric)} per library version (in version "
        f"order), median over runs with its {_level_pct(cells)} % order-statistic interval; red: "
        f"change points found by E-divisive (apache-otava) on the series of cell medians "
        f"({n_cp} found). {versioned.height} ok runs over "
        f"{data['library_version'].n_unique()} versions."
    )
    return fig


def _findings_doc(results: Path) -> dict:
    doc = read_json(results / "findings.json")
    if doc is None:
        raise ValueError(f"{results / 'findings.json'}: missing or not JSON; run the stats stage")
    return doc


def _findings(results: Path) -> list[dict]:
    return list(_findings_doc(results).get("findings") or [])


def findings_markdown(results: Path) -> str:
    """Every finding of findings.json as its sentence, grouped (report/sentences.py)."""
    return sentences.markdown(_findings(results))


def rtt_source_words(runs: pl.DataFrame) -> str:
    """Where this campaign's round trips come from, as its runs recorded it (rtt_source)."""
    if "rtt_source" not in runs.columns:
        return "the uniform network probe's round trip (kind net)"
    said = [sentences.rtt_source_words(s) for s in sorted(set(runs["rtt_source"].drop_nulls()))]
    return "; ".join(said) if said else "not recorded"


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
         "RTT p50 and p99 (ms, log scale)"),
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
    if figs[0].expected:
        _threshold_lines(figs[0], out, disp)
    figs.append(_idle_active(ok, cells, out, disp))
    figs.append(_rtt_time(ok, series, out))
    figs.append(_world_size(ok, cells, out, disp))
    figs.append(_envmod_time(ok, series, out))
    figs.append(_profiles(ok, cells, out, disp))
    figs.append(_versions(ok, cells, changes, out, disp))
    warmup, warmup_note = tables.warmup_table(ok)
    _write(warmup, out, "warmup.csv")
    table, units = tables.cells_table(cells, disp)
    _write(table, out, "cells-table.csv")
    _write(tables.failed_table(runs), out, "failed-runs.csv")
    _write(tables.interference_table(runs), out, "interfered-runs.csv")
    write_text(out / "findings.md", findings_markdown(results))
    found = _findings(results)
    first = answer.rows(answer.answer_findings(found), answer.ANSWER_METRICS)
    _write(first, out, "answer.csv")
    _write(answer.rows(found), out, "comparisons-table.csv")
    plan = read_json(results / "plan.json") or {}
    doc = {
        "answer": {
            "question": answer.question(plan, first, found),
            "file": "answer.csv",
            "comparisons": "comparisons-table.csv",
            "rtt_source": rtt_source_words(runs),
            "suspect_rule": _findings_doc(results).get("suspect_rule") or "",
        },
        "figures": [asdict(f) for f in figs],
        "tables": {
            "warmup": {"file": "warmup.csv", "note": warmup_note},
            "cells": {"file": "cells-table.csv", "units": units},
            "failed": {"file": "failed-runs.csv"},
            "interfered": {"file": "interfered-runs.csv"},
        },
        "findings": "findings.md",
    }
    write_json(out / "manifest.json", doc, sort_keys=False)
    return figs
