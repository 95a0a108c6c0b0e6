"""Every planned comparison of a campaign: transport against transport, version against version.

    runs.parquet -> comparisons.parquet/.csv   one row per planned pair x compared metric

A comparison is planned wherever the campaign put two comparable transports (or two versions of
one transport) in one context (CONTEXT_KEYS): it has a row whether or not its runs succeeded, so
"no_difference" never looks like "not tested". Per row: both medians over runs with their
order-statistic intervals (the same runs as the ratio), the ratio of medians b/a with its BCa
interval, Cliff's delta, the Mann-Whitney p and its Benjamini-Hochberg adjustment over every row
that has a p, and the verdict:

    lower / higher   the BH-adjusted p is below ALPHA and the ratio's interval excludes 1
    undecided        one of the two holds, not both (e.g. too few usable runs for the test)
    no_difference    neither: the interval bounds what the runs allow
    not_compared     one side has no usable run (the note says which)

Suspect runs (stats.suspects) are named per row, with the result with the choice about them
reversed: a far run is kept, so the alternative leaves it out; a busy or stalled run is left
out, so the alternative puts it back. Scale columns give a round trip its meaning: one frame at
the cells' tick rate and the round trip the network profile itself adds. Where a round trip rides
the reliable channel and the two sides' manifests declare it differently ordered
(reliable_ordered), the row says so (reliable_order): they deliver different services.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import polars as pl

from stats import compare, interference, intervals, suspects
from stats.findings import LEVEL, num
from stats.runs_frame import float_column

# Metrics compared between transports and versions; lower is better for every one of them.
COMPARED_METRICS: Final = (
    "rtt_net_p50_us", "rtt_net_p99_us", "server_cpu_cores", "server_cpu_us_per_msg",
    "server_instr_per_msg",
)  # fmt: skip
# Cells that differ only in transport (or library version) are compared with each other.
CONTEXT_KEYS: Final = (
    "prototype", "players", "workload", "params", "network_profile", "duration_s",
)  # fmt: skip
ALPHA: Final = 0.05
VERDICTS: Final = ("lower", "higher", "undecided", "no_difference", "not_compared")


def _options_label(options_json: str | None) -> str:
    """Transport options (a JSON object) as in cell ids: " t.key=value" each, "" for none."""
    options = json.loads(options_json) if options_json else {}
    return "".join(f" t.{k}={v}" for k, v in sorted(options.items()))


def with_variant(runs: pl.DataFrame) -> pl.DataFrame:
    """A `_variant` column: the transport as measured (with its variant, enet+merged-acks, and
    the campaign's transport options), then @version for another library version than the
    pinned one, so that neither two versions nor two tunings of one transport are pooled."""
    label = pl.col("transport").cast(pl.String)
    if "transport_options" in runs.columns:
        options = pl.col("transport_options").map_elements(_options_label, return_dtype=pl.String)
        label = pl.concat_str([label, options])
    if "library_version" not in runs.columns:
        return runs.with_columns(_variant=label)
    version = pl.col("library_version").cast(pl.String).fill_null("pinned")
    return runs.with_columns(
        _variant=pl.when(version == "pinned")
        .then(label)
        .otherwise(pl.concat_str([label, pl.lit("@"), version]))
    )


def _comparable(a: str, b: str) -> bool:
    """Pairs worth a comparison: two transports at one version label (pinned against pinned),
    or two versions of one transport; not a transport at one version against another transport
    at another."""
    ta, _, va = a.partition("@")
    tb, _, vb = b.partition("@")
    return ta == tb or va == vb


def verdict(p_adjusted: float | None, low: float | None, high: float | None) -> str:
    """The rule every comparison is decided by (b against a)."""
    significant = p_adjusted is not None and p_adjusted < ALPHA
    excludes = low is not None and high is not None and (high < 1.0 or low > 1.0)
    if significant and excludes:
        return "lower" if high < 1.0 else "higher"  # type: ignore[operator]
    return "undecided" if significant or excludes else "no_difference"


def _values(df: pl.DataFrame, metric: str) -> np.ndarray:
    arr = float_column(df, metric)
    return arr[np.isfinite(arr)]


def _median(values: np.ndarray) -> dict[str, float | None]:
    iv = intervals.quantile_ci(values, 0.5, level=LEVEL)
    return {"median": num(iv.estimate), "low": num(iv.low), "high": num(iv.high)}


def _side(df: pl.DataFrame, metric: str, leave_out: set[str], put_back: pl.DataFrame) -> np.ndarray:
    """One side's values with far runs left out and busy runs put back (the alternative)."""
    kept = df.filter(~pl.col("_key").is_in(list(leave_out)))
    return _values(pl.concat([kept, put_back], how="diagonal_relaxed"), metric)


def _suspects_of(
    side: str, used: pl.DataFrame, left: pl.DataFrame, far: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The suspect runs of one side: far ones among the runs used, and those left out (busy
    beside a neighbour, or stalled)."""
    out: list[dict[str, Any]] = []
    for key in used["_key"].to_list():
        if (hit := far.get(key)) is not None:
            out.append({"run": key, "side": side, "why": "far", "value": hit["value"],
                        "cell_median": hit["cell_median"], "z": round(hit["z"], 1)})  # fmt: skip
    busy = interference.interfered(left)
    for r in left.with_columns(busy.alias("_is_busy")).iter_rows(named=True):
        if r["_is_busy"]:
            out.append({"run": r["_key"], "side": side, "why": "busy",
                        "others_cores": num(r.get("others_cpu_cores")),
                        "steal_cores": num(r.get("steal_cores"))})  # fmt: skip
        else:
            out.append({"run": r["_key"], "side": side, "why": "stalled",
                        "reason": r.get("stall_reason")})  # fmt: skip
    return out


def _row(
    metric: str, ga: pl.DataFrame, gb: pl.DataFrame, far: Mapping[str, dict[str, Any]], seed: int
) -> dict[str, Any]:
    """One comparison's numbers. ga and gb are the two cells' ok runs (with _busy and _key);
    far holds this metric's far runs by _key."""
    use_a, use_b = ga.filter(~pl.col("_busy")), gb.filter(~pl.col("_busy"))
    busy_a, busy_b = ga.filter(pl.col("_busy")), gb.filter(pl.col("_busy"))
    va, vb = _values(use_a, metric), _values(use_b, metric)
    row: dict[str, Any] = {"n_a": len(va), "n_b": len(vb)}
    row |= {f"a_{k}": v for k, v in _median(va).items()}
    row |= {f"b_{k}": v for k, v in _median(vb).items()}
    if not (va.size and vb.size):
        missing = " and ".join(s for s, v in (("a", va), ("b", vb)) if not v.size)
        return row | {"verdict": "not_compared", "note": f"no usable run in {missing}"}
    ratio = compare.ratio_of_medians(va, vb, level=LEVEL, seed=seed)
    row |= {
        "ratio_b_over_a": num(ratio.estimate), "ci_low": num(ratio.low),
        "ci_high": num(ratio.high), "cliffs_delta": num(compare.cliffs_delta(va, vb)),
        "hodges_lehmann": num(compare.hodges_lehmann(va, vb)),
        "p_value": num(compare.mann_whitney_p(va, vb)), "note": ratio.note,
    }  # fmt: skip
    found = [*_suspects_of("a", use_a, busy_a, far), *_suspects_of("b", use_b, busy_b, far)]
    if not found:
        return row
    alt_a = _side(use_a, metric, set(far), busy_a)
    alt_b = _side(use_b, metric, set(far), busy_b)
    alt = compare.ratio_of_medians(alt_a, alt_b, level=LEVEL, seed=seed)
    both = alt_a.size and alt_b.size
    return row | {
        "suspects": json.dumps(found), "alt_ratio": num(alt.estimate), "alt_low": num(alt.low),
        "alt_high": num(alt.high), "alt_p": num(compare.mann_whitney_p(alt_a, alt_b)) if both
        else None, "alt_n_a": len(alt_a), "alt_n_b": len(alt_b),
    }  # fmt: skip


def _first(group: pl.DataFrame, column: str) -> float | None:
    if column not in group.columns:
        return None
    values = group[column].drop_nulls()
    return num(values[0]) if values.len() else None


def _scale(group: pl.DataFrame, metric: str) -> dict[str, float | None]:
    """What gives a round trip its meaning: one frame at the tick rate, the profile's own RTT."""
    if not metric.startswith("rtt_"):
        return {"frame_us": None, "profile_rtt_us": None}
    tick = _first(group, "tick_rate_hz")
    return {
        "frame_us": 1e6 / tick if tick else None,
        "profile_rtt_us": _first(group, "profile_rtt_us"),
    }


# Workloads whose net RTT rides the channel their `channel` parameter names (reliable by default).
_CHANNEL_WORKLOADS: Final = ("stream", "pingpong")


def _reliable_order(group: pl.DataFrame, a: str, b: str, metric: str) -> str | None:
    """Where a round trip rides the reliable channel and only one side declares it ordered
    (manifest reliable_ordered: under loss an ordered channel holds later messages behind a
    lost one, head-of-line blocking; an unordered one does not): {"a": .., "b": ..} as JSON,
    else None."""
    if not metric.startswith("rtt_") or "reliable_ordered" not in group.columns:
        return None
    workload = str(group["workload"][0])
    params = json.loads(str(group["params"][0])) if "params" in group.columns else {}
    if workload not in _CHANNEL_WORKLOADS or params.get("channel", "reliable") != "reliable":
        return None
    ordered = {
        side: group.filter(pl.col("_variant") == name)["reliable_ordered"][0]
        for side, name in (("a", a), ("b", b))
    }
    return json.dumps(ordered) if ordered["a"] != ordered["b"] else None


def _planned(metric: str, cells: pl.DataFrame) -> bool:
    """Whether a pair of cells (all their planned runs) is meant to have this metric:
    instructions per message only where a profiler counts them."""
    if metric != "server_instr_per_msg":
        return True
    return "server_profiler" in cells.columns and cells["server_profiler"].is_not_null().any()


def comparisons(runs: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """Every planned comparison (module docstring), BH over the rows that have a p."""
    if "run_id" not in runs.columns:  # a table built by hand: the rows are the runs
        runs = runs.with_row_index("run_id").with_columns(pl.col("run_id").cast(pl.String))
    planned = with_variant(runs).with_columns(
        pl.format("{}/{}", "cell_id", "run_id").alias("_key"),
        suspects.left_out(runs).alias("_busy"),  # busy beside a neighbour, or stalled
    )
    far: dict[str, dict[str, dict[str, Any]]] = {}
    for r in suspects.far_runs(runs, COMPARED_METRICS).iter_rows(named=True):
        far.setdefault(r["metric"], {})[f"{r['cell_id']}/{r['run_id']}"] = r
    keys = [k for k in CONTEXT_KEYS if k in planned.columns]
    # A metric no run of the campaign measured is not planned anywhere.
    metrics = [
        m for m in COMPARED_METRICS if m in planned.columns and planned[m].is_not_null().any()
    ]
    rows: list[dict[str, Any]] = []
    for ctx, group in planned.group_by(keys, maintain_order=True):
        ok = group.filter(pl.col("status").cast(pl.String) == "ok")
        for a, b in itertools.combinations(sorted(group["_variant"].unique().to_list()), 2):
            if not _comparable(a, b):
                continue
            pair = group.filter(pl.col("_variant").is_in([a, b]))
            ga, gb = ok.filter(pl.col("_variant") == a), ok.filter(pl.col("_variant") == b)
            for metric in (m for m in metrics if _planned(m, pair)):
                rows.append(
                    {**dict(zip(keys, ctx, strict=True)), "metric": metric, "a": a, "b": b,
                     **_scale(group, metric), **_row(metric, ga, gb, far.get(metric, {}), seed),
                     "reliable_order": _reliable_order(group, a, b, metric)}
                )  # fmt: skip
    return _decided(pl.DataFrame(rows, schema_overrides=_SCHEMA, infer_schema_length=None))


_SCHEMA: Final = {
    "ratio_b_over_a": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "cliffs_delta": pl.Float64, "hodges_lehmann": pl.Float64, "p_value": pl.Float64,
    "a_median": pl.Float64, "a_low": pl.Float64, "a_high": pl.Float64, "b_median": pl.Float64,
    "b_low": pl.Float64, "b_high": pl.Float64, "suspects": pl.String, "alt_ratio": pl.Float64,
    "alt_low": pl.Float64, "alt_high": pl.Float64, "alt_p": pl.Float64, "frame_us": pl.Float64,
    "profile_rtt_us": pl.Float64, "note": pl.String, "verdict": pl.String,
    "reliable_order": pl.String,
}  # fmt: skip


def _decided(df: pl.DataFrame) -> pl.DataFrame:
    """p_bh over the rows that were compared, then each row's verdict."""
    if not df.height:
        return df
    for col, dtype in _SCHEMA.items():
        if col not in df.columns:
            df = df.with_columns(pl.lit(None, dtype).alias(col))
    compared = (df["verdict"].fill_null("") != "not_compared").to_numpy()
    p = df["p_value"].fill_null(1.0).to_numpy()
    p_bh = np.full(len(p), np.nan)
    if compared.any():
        p_bh[compared] = compare.benjamini_hochberg(p[compared])
    df = df.with_columns(p_bh=pl.Series(p_bh).fill_nan(None))
    verdicts: Sequence[str] = [
        r["verdict"] or verdict(r["p_bh"], r["ci_low"], r["ci_high"])
        for r in df.select("verdict", "p_bh", "ci_low", "ci_high").iter_rows(named=True)
    ]
    return df.with_columns(verdict=pl.Series(verdicts, dtype=pl.String))
