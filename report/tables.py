"""The report's tables, shaped from the stats stage's tables: cells, warm-up, failed runs, runs
beside a busy neighbour (report/figdata.py writes them beside the figures' data).

Cells are keyed as a reader names them (transport, version, players, workload, network profile)
and sorted by those keys; a note every row would repeat is said once.
"""

from __future__ import annotations

import json

import polars as pl

from report import sentences
from report.display import Display

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


def _readable(df: pl.DataFrame, *keep: str) -> pl.DataFrame:
    """The cell's keys as a reader names a cell (the prototype where several ran, transport,
    version, players, workload with its parameters, network profile) in front of `keep`, sorted
    by them; no hashed cell ids."""
    workload = pl.col("workload").cast(pl.String)
    if "params" in df.columns:
        params = pl.col("params").map_elements(sentences.params_label, return_dtype=pl.String)
        workload = pl.when(params != "").then(pl.format("{} ({})", workload, params))
        workload = workload.otherwise(pl.col("workload").cast(pl.String))
    version = (
        pl.col("library_version").cast(pl.String).fill_null("pinned")
        if "library_version" in df.columns
        else pl.lit("pinned")
    )
    shaped = df.with_columns(
        pl.col("transport").cast(pl.String),
        version.alias("version"),
        workload.alias("_workload"),
        pl.col("network_profile").cast(pl.String).alias("profile"),
    )
    keys = ["transport", "version", "players", "_workload", "profile"]
    # Cells of several prototypes (mono against reference over tcp) differ by prototype alone.
    if "prototype" in shaped.columns and shaped["prototype"].n_unique() > 1:
        keys.insert(0, "prototype")
    return shaped.sort(keys).select(
        *[pl.col(k).alias("workload") if k == "_workload" else pl.col(k) for k in keys], *keep
    )


def warmup_table(ok: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Per cell (readable keys): the MSER-5 cuts of its runs and every run that did not settle,
    by name; and the note every cell shares, said once ("" if none is shared): then the table
    has no notes column."""
    if "warmup_cut_s" not in ok.columns:  # no ok run had samples: the same columns, empty cuts
        ok = ok.with_columns(pl.lit(None, pl.Float64).alias("warmup_cut_s"))
    flag = (
        pl.col("warmup_second_half").fill_null(False)
        if "warmup_second_half" in ok.columns
        else pl.lit(False)
    )
    note = pl.col("warmup_note") if "warmup_note" in ok.columns else pl.lit(None, pl.String)
    cell_keys = ("prototype", "transport", "library_version", "players", "workload", "params",
                 "network_profile")  # fmt: skip
    keys = [k for k in cell_keys if k in ok.columns]
    per_cell = (
        ok.with_columns(flag.alias("_flag"), note.cast(pl.String).alias("_note"))
        .group_by(["cell_id", *keys], maintain_order=True)
        .agg(
            pl.len().alias("runs"),
            pl.col("warmup_cut_s").median().alias("cut_median_s"),
            pl.col("warmup_cut_s").min().alias("cut_min_s"),
            pl.col("warmup_cut_s").max().alias("cut_max_s"),
            pl.col("run_id").filter(pl.col("_flag")).str.join(" ").alias("not_settled"),
            pl.col("_note").drop_nulls().unique().sort().str.join("; ").alias("notes"),
        )
    )
    table = _readable(
        per_cell, "runs", "cut_median_s", "cut_min_s", "cut_max_s", "not_settled", "notes"
    )
    notes = set(table["notes"].to_list())
    if table.height > 1 and len(notes) == 1 and (shared := notes.pop()):
        return table.drop("notes"), shared
    return table, ""


def cells_table(cells: pl.DataFrame, disp: Display) -> tuple[pl.DataFrame, str]:
    """The report's cells table: per cell its ok/planned runs and, per TABLE_METRICS, the median
    with its interval in the shown unit in one column (3 significant digits; "n/a" without a
    median, no brackets without an interval); and a sentence naming the shown units."""
    first = cells.filter(pl.col("metric") == TABLE_METRICS[0])
    table = _readable(
        first.with_columns(pl.format("{}/{}", "n_runs", "runs_planned").alias("runs")),
        "cell_id",
        "runs",
    )
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
        # The median and its interval in one column: "0.104 [0.0858, 0.108]" (the PDF's
        # page has no room for a second column per metric).
        values = []
        for cell_id in table["cell_id"]:
            r = rows.get(cell_id) or {}
            low = r.get("y_low")
            bounds = (
                "" if low is None else f" [{sentences.fmt(low)}, {sentences.fmt(r.get('y_high'))}]"
            )
            values.append(sentences.fmt(r.get("y")) + bounds)
        table = table.with_columns(pl.Series(name, values, dtype=pl.String))
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
    return table.drop("cell_id"), units


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
    "stalled": pl.Boolean,
    "stall_reason": pl.String,
}


def interference_table(runs: pl.DataFrame) -> pl.DataFrame:
    """The report's table of ok runs left out of the comparisons, in the runs table's order:
    measured beside a busy neighbour (stats.interference: what the other processes and the
    hypervisor took of the machine in the window) or stalled inside the window (stats.stalls),
    each with the stats stage's reason."""
    absent = [
        pl.lit(None, t).alias(c) for c, t in INTERFERENCE_COLUMNS.items() if c not in runs.columns
    ]
    full = runs.with_columns(absent)
    busy = pl.col("interference").fill_null(False)
    stalled = pl.col("stalled").fill_null(False)
    left = full.filter((pl.col("status") == "ok") & (busy | stalled))
    return left.select(
        pl.format("{}/{}", "cell_id", "run_id").alias("run"),
        pl.col("others_cpu_cores").round(3),
        pl.col("steal_cores").round(3),
        pl.concat_str(
            [pl.col("interference_reason"), pl.col("stall_reason")],
            separator="; ",
            ignore_nulls=True,
        ).alias("reason"),
    )
