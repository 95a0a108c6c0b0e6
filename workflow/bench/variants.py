"""bench-variants: each transport as its library's users get it (stock) against each of its named
tunings (the manifest's transports.variants), on one machine in one campaign
(data/bench/variants.json).

The campaign runs in rounds (workflow/campaign/order.py), so every variant is measured beside
the stock transport round after round, through Snakemake as `make run` does:
- lan: stock and every variant at 50 and 200 players, the stream workload (100 B at 60 Hz per
  player with the periodic probes beside it, the load of `netstick bench prototypes`), 12 s
  windows, 6 runs per cell: RTT p50 and p99, server CPU, and the packets the server sent and
  received per second (its veth's exact counters), which an acknowledgement scheme changes;
- turbulent: the same at 20 active players through the blog's turbulent profile (10 % loss
  with 25 % correlation on the way up, 13.7 ms one way): the time until every player was
  connected, and the runs whose players could not connect (failed runs are not retried here:
  they are the measurement);
- stream: the reliable-streams campaign's cell under turbulent (one player's reliable ordered
  stream of 400 B at 60 Hz, echoed, no periodic probes), 20 s windows, 4 runs per cell: the RTT
  p50 and p99 the blog compared (its stock ENet had a mean of 139 ms there).
Each variant against stock, per block and player count: the ratio of medians (variant / stock)
with its 95 % bootstrap interval (stats.compare, as the statistics stage compares cells).

    netstick bench variants [--transports enet] [--repetitions 6]   -> data/bench/variants.json
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from prototypes.contract import manifest as manifests
from stats import compare
from stats.findings import num
from workflow.bench import cells, options, record, scratch
from workflow.files import REPO

LAN_METRICS = (
    "rtt_net_p50_us",
    "rtt_net_p99_us",
    "server_cpu_cores",
    "server_tx_packets_per_s",
    "server_rx_packets_per_s",
)
TURBULENT_METRICS = ("connect_s", "rtt_net_p50_us", "rtt_net_p99_us")
STREAM_METRICS = ("rtt_net_p50_us", "rtt_net_p99_us", "server_tx_packets_per_s")
PLAYERS = (50, 200)
TURBULENT_PLAYERS = 20


def labels(transports: Sequence[str]) -> list[str]:
    """Every transport of the reference that declares variants, stock first, then its variants:
    enet, enet+merged-acks, ..."""
    man = manifests.load(cells.REFERENCE_MANIFEST)
    out = []
    for name in transports:
        out += [name, *(f"{name}+{v}" for v in man.transport(name).variants)]
    return out


def with_variants(transports: Sequence[str] | None) -> list[str]:
    """The transports asked for, or every one of the reference that declares a variant."""
    man = manifests.load(cells.REFERENCE_MANIFEST)
    if transports:
        for name in transports:
            if not man.transport(name).variants:
                raise SystemExit(f"--transports: {name} declares no variants in {man.path}")
        return list(transports)
    return [t.name for t in man.transports if t.variants]


def campaign_doc(transports: Sequence[str], repetitions: int) -> dict[str, Any]:
    doc = scratch.campaign_doc(
        "bench-variants",
        "each transport as its users get it against its named tunings, side by side",
        {"name": "reference", "transports": labels(transports)},
        block="lan",
        seed=20261127,
        repetitions=repetitions,
        defaults={"duration_s": 12, "tick_rate_hz": 60, "network_profile": "lan"},
        players=PLAYERS,
        workloads=["stream"],
    )
    doc["order"] = "rounds"
    doc["matrix"].append(
        {
            "name": "turbulent",
            "prototypes": [{"name": "reference", "transports": labels(transports)}],
            "players": [TURBULENT_PLAYERS],
            "workloads": [{"name": "active"}],
            "network_profiles": ["turbulent"],
            "cell": {"duration_s": 8},
        }
    )
    doc["matrix"].append(
        {
            "name": "stream",
            "prototypes": [{"name": "reference", "transports": labels(transports)}],
            "players": [1],
            "workloads": [
                {"name": "stream", "params": {"size": 400, "rate": 60, "channel": "reliable"}}
            ],
            "network_profiles": ["turbulent"],
            "repetitions": max(2, repetitions * 2 // 3),
            "cell": {"duration_s": 20, "extra_client_flags": ["-probe-hz", "0"]},
        }
    )
    return doc


def _comparison(stock: pl.DataFrame, tuned: pl.DataFrame, metric: str) -> dict[str, Any]:
    a = stock[metric].drop_nulls().to_numpy()
    b = tuned[metric].drop_nulls().to_numpy()
    ratio = compare.ratio_of_medians(a, b, level=0.95, seed=0)
    low, high = num(ratio.low), num(ratio.high)
    return {
        "metric": metric,
        "stock_median": num(np.median(a)) if a.size else None,
        "variant_median": num(np.median(b)) if b.size else None,
        "ratio": num(ratio.estimate),
        "ci_low": low,
        "ci_high": high,
        "n_stock": int(a.size),
        "n_variant": int(b.size),
        "verdict": "difference"
        if low is not None and high is not None and (low > 1 or high < 1)
        else "no difference shown; bound = interval",
    }


def comparisons(runs: pl.DataFrame, transports: Sequence[str]) -> list[dict[str, Any]]:
    """Every variant against its stock transport, per block and player count."""
    rows = []
    for (block, players), group in runs.group_by(["block", "players"], maintain_order=True):
        metrics = {"turbulent": TURBULENT_METRICS, "stream": STREAM_METRICS}.get(
            str(block), LAN_METRICS
        )
        for name in transports:
            stock = group.filter((pl.col("transport") == name) & (pl.col("status") == "ok"))
            for label in labels([name])[1:]:
                tuned = group.filter(pl.col("transport") == label)
                failed = tuned.filter(pl.col("status") != "ok").height
                ok = tuned.filter(pl.col("status") == "ok")
                for metric in metrics:
                    rows.append(
                        {
                            "block": block,
                            "players": players,
                            "stock": name,
                            "variant": label,
                            "runs_failed_stock": group.filter(
                                (pl.col("transport") == name) & (pl.col("status") != "ok")
                            ).height,
                            "runs_failed_variant": failed,
                            **_comparison(stock, ok, metric),
                        }
                    )
    return rows


def run(
    out: Path, repo: Path, transports: Sequence[str], repetitions: int, resume: Path | None = None
) -> dict[str, Any]:
    """Run the campaign in a new scratch directory, or finish the one in resume (Snakemake
    keeps its finished runs), and write the record."""
    if resume is None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        root = repo / "data" / "bench-runs" / f"variants-{stamp}"
        (root / "work").mkdir(parents=True)
        camp = scratch.campaign_file(root, campaign_doc(transports, repetitions))
    else:
        root = resume.resolve()
        camp = root / "bench-variants.yaml"
    wall_s = scratch.complete(root, camp, config=["retries=0"], timeout_s=3 * 3600)
    runs = pl.read_parquet(root / "data" / "results" / "bench-variants" / "runs.parquet")
    rows = comparisons(runs, transports)
    body = {
        "measured": {
            "wall_s": round(wall_s, 1),
            "resumed": resume is not None,  # wall_s is then the finishing session's only
            "runs": runs.height,
            "runs_failed": runs.filter(pl.col("status") != "ok").height,
            "differences": sum(1 for r in rows if r["verdict"] == "difference"),
        },
        "transports": labels(transports),
        "comparisons": rows,
        "raw": str(root),
        "targets": [],
    }
    return record.write(out, "bench-variants", body, repo=repo)


def comparisons_text(rows: Sequence[dict[str, Any]]) -> str:
    """One line per comparison for the terminal: variant / stock with its interval."""

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    return "\n".join(
        f"{r['block']} p{r['players']} {r['variant']} / {r['stock']} {r['metric']}: "
        f"{f(r['ratio'])} [{f(r['ci_low'])}, {f(r['ci_high'])}] {r['verdict']} "
        f"(failed runs {r['runs_failed_stock']} stock, {r['runs_failed_variant']} variant)"
        for r in rows
    )


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "variants.json")
    p.add_argument(
        "--transports",
        type=options.names,
        default=None,
        help="transports of the reference whose variants to measure (default: every one "
        "that declares variants)",
    )
    p.add_argument("--repetitions", type=options.positive_int, default=6)
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="a scratch directory of an earlier bench (data/bench-runs/variants-STAMP) to "
        "finish: its finished runs are kept",
    )


def main(args: argparse.Namespace) -> int:
    transports = with_variants(args.transports)
    doc = run(args.out, REPO, transports, args.repetitions, args.resume)
    print(comparisons_text(doc["comparisons"]))
    print(f"results in {args.out}")
    return 0
