"""Ingest: raw runs become Parquet tables; bad rows are counted per file, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from stats import ingest

HEADER = "t_unix_ns,player,seq,rtt_us,kind,send_late_us\n"
T0 = 1_700_000_000_000_000_000


def _campaign(raw: Path, runs: dict[str, str]) -> None:
    """runs: run_id -> rtt.csv body of its client-0 (cell c1)."""
    plan_runs = []
    for run_id, body in runs.items():
        cell = {
            "cell_id": "c1", "run_id": run_id, "prototype": "prototypes/reference/prototype.yaml",
            "transport": "tcp", "players": 2, "workload": "idle", "duration_s": 60.0,
            "network_profile": "lan", "params": {}, "transport_options": {}, "seed": 1,
        }  # fmt: skip
        plan_runs.append({"key": f"c1/{run_id}", "block": "b", "cell": cell})
        run = raw / "c1" / run_id
        (run / "logs").mkdir(parents=True)
        (run / "logs" / "client-0.rtt.csv").write_text(body)
        meta = {"window_start_unix_ns": T0, "window_end_unix_ns": T0 + 60 * 10**9}
        (run / "meta.json").write_text(json.dumps(meta))
        (raw / "c1" / f"{run_id}.json").write_text(json.dumps({"status": "ok"}))
    (raw / "plan.json").write_text(json.dumps({"campaign": "t", "runs": plan_runs}))


def _rows(n: int, rtt_us: float = 500.0, late: str = "12") -> str:
    return "".join(f"{T0 + i * 10**9},{i % 2},{i},{rtt_us + i},net,{late}\n" for i in range(n))


def test_ingest_writes_samples_and_runs_and_counts_bad_rows(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "t"
    good = HEADER + _rows(60)
    bad = HEADER + _rows(58) + "oops,1,2,3,net,\n" + f"{T0},1,2,3.0,warp,\n"
    _campaign(raw, {"r1": good, "r2": bad, "r3": "t,player\n1,2\n"})
    out = tmp_path / "results"
    report = ingest.ingest(raw, out)
    assert report.runs == 3 and report.runs_ok == 3
    assert report.samples == 60 + 58
    [(bad_file, n_bad)] = report.bad_rows.items()
    assert bad_file.endswith("c1/r2/logs/client-0.rtt.csv") and n_bad == 2
    [(bad_header, why)] = report.bad_files.items()
    assert bad_header.endswith("c1/r3/logs/client-0.rtt.csv") and "expected" in why

    samples = pl.read_parquet(out / "samples.parquet")
    assert samples.height == 118
    assert set(samples.columns) >= {"cell_id", "run_id", "t_s", "kind", "rtt_us", "source"}
    assert samples.filter(pl.col("run_id") == "r1")["t_s"].to_list()[:3] == [0.0, 1.0, 2.0]
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.height == 3 and "warmup_cut_s" in runs.columns
    doc = json.loads((out / "ingest.json").read_text())
    assert doc["samples"] == 118 and doc["bad_rows"] == {bad_file: 2}

    summary = ingest.summarise(out / "samples.parquet")
    r1 = summary.filter((pl.col("run_id") == "r1") & (pl.col("kind") == "net")).row(0, named=True)
    assert r1["n"] == 60 and r1["rtt_p50_us"] == 529.5  # linear percentile of 500..559


def test_ingest_of_a_campaign_without_ok_runs_still_writes_tables(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "t"
    _campaign(raw, {"r1": HEADER})
    (raw / "c1" / "r1.json").write_text(json.dumps({"status": "failed", "reason": "not_ready"}))
    out = tmp_path / "results"
    report = ingest.ingest(raw, out)
    assert report.runs_ok == 0 and report.samples == 0
    assert pl.read_parquet(out / "samples.parquet").height == 0
    assert pl.read_parquet(out / "runs.parquet")["status"].to_list() == ["failed"]
