"""bench-history: the nightly decisions validated end to end on this machine
(data/bench/history.json).

Short nights of the reference prototype (same campaign, same seed, each in its own data
directory) are imported into a fresh history one after the other; from the second night on,
each is decided against the nights before it (at most k, same hardware):

(a) identical nights: no cell may be suspected;
(b) a night whose cells add `delay_ms` of one-way delay in the network emulator (a custom
    profile object in the cell, both directions; the baseline nights go through the emulator
    too, `lan-emulated`, so the delay is the only difference) must be suspected, and the
    confirming re-run (the suspected cells only, as campaign <name>-confirm-<night_id>) must
    confirm it.

A profile is part of what a cell measures, so the delayed cells have ids of their own; they
are filed in the history under the campaign's cell ids (import's cell_ids; the night keeps
measured_cell_id), which is what a real regression, same cells and slower code, looks like.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from stats.history.decide import DEFAULT_K, confirm, decide, suspected_cells, write_decision
from stats.history.store import import_night, read_history
from workflow.bench import options, record, scratch
from workflow.bench.targets import target_rows, targets_text
from workflow.campaign import expand as campaigns
from workflow.campaign.confirm import confirm_campaign
from workflow.harness.environment import this_machine

NAME = "history-check"
TARGETS = {
    "identical_nights_confirmed_cells": ("<=", 0, "identical nights: regressions reported"),
    "delay_night_cells_confirmed_share": (">=", 1.0, "delay night: share of cells confirmed"),
}


def campaign_doc(
    transports: Sequence[str], players: int, repetitions: int, duration_s: float, seed: int,
    profile: str | dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    return scratch.campaign_doc(
        NAME,
        "A short night of the reference prototype for the history check.",
        {"name": "reference", "transports": list(transports)},
        block="night",
        seed=seed,
        repetitions=repetitions,
        defaults={"duration_s": duration_s, "network_profile": "lan-emulated"},
        players=[players],
        workloads=["active"],
        network_profiles=[profile],
    )


def delay_profile(delay_ms: float) -> dict[str, Any]:
    return {
        "description": f"{delay_ms} ms one-way delay each way, added by the emulator",
        "up": {"delay_ms": delay_ms},
        "down": {"delay_ms": delay_ms},
    }


def run_campaign(campaign: Path, root: Path, cores: int, timeout_s: float) -> Path:
    """Snakemake up to the campaign's runs table, in a scratch directory root; its results."""
    results = root / "data" / "results" / campaigns.plan(campaign).name
    scratch.complete(
        root,
        campaign,
        "--cores",
        str(cores),
        targets=[results / "runs.parquet"],
        timeout_s=timeout_s,
    )
    if not (results / "runs.parquet").is_file():
        raise RuntimeError(f"campaign {campaign}: no {results / 'runs.parquet'}")
    return results


def _key(cell: dict[str, Any]) -> tuple[Any, ...]:
    return (cell["prototype"], cell["transport"], cell["players"], cell["workload"])


def cell_map(measured: Path, filed_as: Path) -> dict[str, str]:
    """Cell id of measured's cells -> the id of filed_as's cell that differs only by profile."""
    target = {_key(r.cell): r.cell["cell_id"] for r in campaigns.plan(filed_as).runs}
    return {r.cell["cell_id"]: target[_key(r.cell)] for r in campaigns.plan(measured).runs}


def _cells_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    keep = ("cell", "ratio", "interval", "q", "effect_threshold", "suspected", "confirmed")
    return [{k: c.get(k) for k in keep} for c in doc["cells"]]


def validate(
    root: Path,
    *,
    transports: Sequence[str] = ("tcp", "udp"),
    players: int = 20,
    repetitions: int = 6,
    duration_s: float = 5.0,
    identical_nights: int = 5,
    delay_ms: float = 1.0,
    k: int = DEFAULT_K,
    seed: int = 20261126,
    cores: int = 1,
    timeout_s: float = 1800,
) -> dict[str, Any]:
    """Run the nights and the confirming re-run under root; the measured document."""
    hist = root / "history"
    machine = this_machine()
    shape = (transports, players, repetitions, duration_s, seed)
    base_file = scratch.campaign_file(root / "base", campaign_doc(*shape, profile="lan-emulated"))
    delay_file = scratch.campaign_file(
        root / "delay", campaign_doc(*shape, profile=delay_profile(delay_ms))
    )
    nights: list[dict[str, Any]] = []

    def confirmed(doc: dict[str, Any], campaign: Path, mapping: dict[str, str]) -> dict[str, Any]:
        """The decision with the confirming re-run of its suspects (of campaign's own cells)."""
        if not suspected_cells(doc):
            empty = pl.DataFrame({"cell_id": [], "status": [], doc["metric"]: []})
            return confirm(doc, read_history(hist, NAME), empty)
        back = {v: key for key, v in mapping.items()}
        own = dict(
            doc,
            cells=[c | {"cell": back.get(c["cell"], c["cell"])} for c in doc["cells"]],
            rerun_cells=[back.get(c, c) for c in doc.get("rerun_cells", [])],
        )
        tag = f"confirm-{doc['night_id']}"
        conf_file = confirm_campaign(own, campaign, root / tag)
        results = run_campaign(conf_file, root / tag, cores, timeout_s)
        rerun = pl.read_parquet(results / "runs.parquet")
        rerun = rerun.with_columns(pl.col("cell_id").replace(mapping))
        return confirm(doc, read_history(hist, NAME), rerun)

    def night(i: int, campaign: Path, mapping: dict[str, str]) -> dict[str, Any]:
        t0 = time.monotonic()
        results = run_campaign(campaign, root / f"night-{i}", cores, timeout_s)
        stamp = f"2026-01-{i + 1:02d}T02:00:00+00:00"  # night order, whatever the clock says
        import_night(results, hist, stamp, machine, mapping)
        rec: dict[str, Any] = {"night": i + 1, "wall_s": round(time.monotonic() - t0, 1)}
        if i:
            doc = decide(read_history(hist, NAME), k=k)
            t1 = time.monotonic()
            done = confirmed(doc, campaign, mapping)
            rec |= {
                "baseline_nights": len(doc["baseline_nights"]),
                "confirm_wall_s": round(time.monotonic() - t1, 1) if doc["cells"] else None,
                "cells": _cells_of(done),
            }
            out = root / "decisions" / f"night-{i + 1}" / "regressions.json"
            write_decision(done, read_history(hist, NAME), out)
        nights.append(rec)
        return rec

    for i in range(identical_nights):
        night(i, base_file, {})
    mapping = cell_map(delay_file, base_file)
    night(identical_nights, delay_file, mapping)
    last = root / "decisions" / f"night-{identical_nights + 1}" / "regressions.json"
    done = json.loads(last.read_text())
    identical = [c for rec in nights[1:identical_nights] for c in rec["cells"]]
    measured = {
        "identical_nights": identical_nights,
        "identical_nights_decided_cells": len(identical),
        "identical_nights_suspected_cells": sum(bool(c["suspected"]) for c in identical),
        "identical_nights_confirmed_cells": sum(bool(c["confirmed"]) for c in identical),
        "delay_night_cells": len(done["cells"]),
        "delay_night_suspected_cells": len(suspected_cells(done)),
        "delay_night_cells_confirmed_share": (
            sum(bool(c["confirmed"]) for c in done["cells"]) / len(done["cells"])
            if done["cells"]
            else 0.0
        ),
        "delay_night_ratio_min": min((c["ratio"] or 0.0) for c in done["cells"])
        if done["cells"]
        else None,
        "confirm_wall_s": nights[-1]["confirm_wall_s"],
    }
    return {
        "parameters": {
            "transports": list(transports),
            "players": players,
            "repetitions": repetitions,
            "duration_s": duration_s,
            "delay_ms_each_way": delay_ms,
            "k": k,
            "seed": seed,
            "metric": done["metric"],
            "min_effect": done["min_effect"],
            "level": done["level"],
        },
        "measured": measured,
        "nights": nights,
        "regressions": done,
        "targets": target_rows(measured, TARGETS),
    }


def run(out: Path, work: Path, **kwargs: Any) -> dict[str, Any]:
    """validate() in a fresh directory under work (never last time's up-to-date nights)."""
    root = work / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    body = validate(root, **kwargs)
    body["raw"] = str(root)
    return record.write(out, "bench-history", body)


def summary(doc: dict[str, Any]) -> str:
    lines = [targets_text(doc["targets"])]
    for rec in doc["nights"]:
        cells = ", ".join(
            f"{c['cell']}: ratio {c['ratio']:.3g}" + (" suspected" if c["suspected"] else "")
            + (" confirmed" if c.get("confirmed") else "")
            for c in rec.get("cells", []) if c["ratio"] is not None
        )  # fmt: skip
        lines.append(f"night {rec['night']} ({rec['wall_s']} s): {cells or 'first night'}")
    return "\n".join(lines)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=options.BENCH_DIR / "history.json")
    p.add_argument("--work", type=Path, default=options.DATA / "bench-runs" / "history")
    p.add_argument("--transports", default="tcp,udp", help="reference transports (default tcp,udp)")
    p.add_argument("--players", type=options.positive_int, default=20)
    p.add_argument(
        "--repetitions", type=options.positive_int, default=6, help="runs per cell and night"
    )
    p.add_argument(
        "--duration-s", type=options.seconds(0, True), default=5.0, help="window (default 5)"
    )
    p.add_argument(
        "--nights", type=options.positive_int, default=5, help="identical nights (default 5)"
    )
    p.add_argument("--delay-ms", type=float, default=1.0, help="one-way delay of the last night")
    p.add_argument("--cores", type=options.positive_int, default=1, help="snakemake --cores")


def main(args: argparse.Namespace) -> int:
    transports = [t for t in args.transports.split(",") if t]
    doc = run(
        args.out, args.work, transports=transports, players=args.players,
        repetitions=args.repetitions, duration_s=args.duration_s,
        identical_nights=args.nights, delay_ms=args.delay_ms, cores=args.cores,
    )  # fmt: skip
    print(summary(doc))
    print(f"results in {args.out}")
    return 0 if all(t["pass"] for t in doc["targets"]) else 1
