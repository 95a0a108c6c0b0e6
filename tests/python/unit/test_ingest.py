"""Ingest: raw runs become Parquet tables; bad rows are counted per file, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from stats import ingest
from stats.tables import RUNS_SCHEMA, SAMPLES_SCHEMA

from support.raw_campaign import RawCampaign, cell

HEADER = "t_unix_ns,player,seq,rtt_us,kind,send_late_us\n"
T0 = 1_700_000_000_000_000_000


def _campaign(raw: RawCampaign, runs: dict[str, str]) -> Path:
    """One cell c1, a run per item of runs (run_id -> rtt.csv body of its client-0), all ok;
    returns the campaign's directory."""
    cells = [cell("c1", run_id, duration_s=60.0, seed=1) for run_id in runs]
    raw.plan(cells)
    meta = {"window_start_unix_ns": T0, "window_end_unix_ns": T0 + 60 * 10**9}
    for c, body in zip(cells, runs.values(), strict=True):
        raw.ok(c, meta=meta, files={"logs/client-0.rtt.csv": body})
    return raw.dir


def _rows(n: int, rtt_us: float = 500.0, late: str = "12") -> str:
    return "".join(f"{T0 + i * 10**9},{i % 2},{i},{rtt_us + i},net,{late}\n" for i in range(n))


def test_ingest_writes_samples_and_runs_and_counts_bad_rows(
    tmp_path: Path, raw_campaign: RawCampaign
) -> None:
    good = HEADER + _rows(60)
    bad = HEADER + _rows(58) + "oops,1,2,3,net,\n" + f"{T0},1,2,3.0,warp,\n"
    raw = _campaign(raw_campaign, {"r1": good, "r2": bad, "r3": "t,player\n1,2\n"})
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
    assert dict(samples.schema) == SAMPLES_SCHEMA
    assert samples.filter(pl.col("run_id") == "r1")["t_s"].to_list()[:3] == [0.0, 1.0, 2.0]
    runs = pl.read_parquet(out / "runs.parquet")
    assert dict(runs.schema) == RUNS_SCHEMA
    by_run = {r["run_id"]: r for r in runs.iter_rows(named=True)}
    assert [by_run[r]["bad_rows"] for r in ("r1", "r2", "r3")] == [0, 2, 0]
    assert by_run["r1"]["rtt_net_p50_us"] == 529.5  # linear percentile of 500..559
    assert by_run["r1"]["read_error"] is None
    assert "client-0.rtt.csv" in by_run["r3"]["read_error"]
    assert by_run["r3"]["rtt_net_p50_us"] is None  # an unreadable run has no RTT, not a partial one
    doc = json.loads((out / "ingest.json").read_text())
    assert doc["samples"] == 118 and doc["bad_rows"] == {bad_file: 2}


def test_bad_rows_are_counted_per_file_and_summed_per_run(
    tmp_path: Path, raw_campaign: RawCampaign
) -> None:
    # client-0: one row with a field too many; client-1: a blank line and a partial last line
    # (a killed writer), which is neither read nor counted.
    raw = _campaign(raw_campaign, {"r1": HEADER + _rows(10) + f"{T0},0,99,1.0,net,2,extra\n"})
    logs = raw / "c1" / "r1" / "logs"
    (logs / "client-1.rtt.csv").write_text(HEADER + _rows(5) + "\n" + _rows(5) + f"{T0},1,7,2")
    report = ingest.ingest(raw, tmp_path / "results")
    assert report.bad_rows == {str(logs / "client-0.rtt.csv"): 1, str(logs / "client-1.rtt.csv"): 1}
    assert report.samples == 20
    runs = pl.read_parquet(tmp_path / "results" / "runs.parquet")
    assert runs["bad_rows"].to_list() == [2]
    assert runs["rtt_net_samples"].to_list() == [20]


def test_per_run_numbers_use_only_the_window(tmp_path: Path, raw_campaign: RawCampaign) -> None:
    # 70 samples one second apart from the window's start; the window is 60 s long, so the
    # samples at 60..69 s (players leaving, 50 ms) are in samples.parquet but in no summary.
    inside = "".join(f"{T0 + i * 10**9},0,{i},500.0,net,12\n" for i in range(60))
    after = "".join(f"{T0 + i * 10**9},0,{i},50000.0,net,12\n" for i in range(60, 70))
    raw = _campaign(raw_campaign, {"r1": HEADER + inside + after})
    out = tmp_path / "results"
    ingest.ingest(raw, out)
    assert pl.read_parquet(out / "samples.parquet").height == 70
    run = pl.read_parquet(out / "runs.parquet").row(0, named=True)
    assert (run["rtt_net_samples"], run["rtt_net_p99_us"]) == (60, 500.0)
    series = pl.read_parquet(out / "timeseries.parquet")
    n = series.filter(pl.col("metric") == "rtt_net_n")
    assert (n.height, n["t_s"].max()) == (60, 59.0)
    # The warm-up judges the same 60 flat seconds (no cut); the fixed cut keeps 5..59 s.
    assert (run["warmup_cut_s"], run["warmup_second_half"]) == (0.0, False)
    assert run["rtt_net_p50_after_fixed_cut_us"] == 500.0


def test_ingest_of_a_campaign_without_ok_runs_still_writes_tables(
    tmp_path: Path, raw_campaign: RawCampaign
) -> None:
    [c] = raw_campaign.plan([cell("c1", "r1", duration_s=60.0, seed=1)])["runs"]
    raw_campaign.failed(c["cell"], {"status": "failed", "reason": "not_ready"})
    raw = raw_campaign.dir
    out = tmp_path / "results"
    report = ingest.ingest(raw, out)
    assert report.runs_ok == 0 and report.samples == 0
    assert pl.read_parquet(out / "samples.parquet").height == 0
    assert pl.read_parquet(out / "runs.parquet")["status"].to_list() == ["failed"]


def _varied_campaign(raw: RawCampaign) -> Path:
    """Eight runs in two cells, in the states ingest must keep apart: clean runs of different
    sizes (one with a player id beyond int32, null in the table), one with bad rows (numpy's
    path), one whose rtt.csv has another header, one with a net.csv that does not parse, one
    failed run and one not run."""
    rng = np.random.default_rng(7)

    def body(n: int) -> str:
        t = T0 - 3 * 10**9 + np.sort(rng.integers(0, 66 * 10**9, n))
        rtt = np.round(rng.lognormal(np.log(800), 0.3, n), 1)
        kinds = rng.choice(["net", "net", "net", "app"], n)
        return HEADER + "".join(
            f"{t[i]},{i % 5},{i},{rtt[i]},{kinds[i]},{'' if i % 9 == 0 else i % 50}\n"
            for i in range(n)
        )

    cells = [cell(f"c{i % 2}", f"r{i}", duration_s=60.0, seed=i) for i in range(8)]
    raw.plan(cells)
    meta = {"window_start_unix_ns": T0, "window_end_unix_ns": T0 + 60 * 10**9}
    files = {
        "r0": {"logs/client-0.rtt.csv": body(3000), "logs/client-1.rtt.csv": body(1000)},
        "r1": {"logs/client-0.rtt.csv": body(500) + f"{T0},{2**40},1,2.0,net,1\n"},
        "r2": {"logs/client-0.rtt.csv": body(800) + "oops,1,2,3,net,\n" + f"{T0},1,2,3.0,x,\n"},
        "r3": {"logs/client-0.rtt.csv": "t,player\n1,2\n"},
        "r4": {"logs/client-0.rtt.csv": body(700), "net.csv": "t_unix_ns,iface\nx,y\n"},
        "r6": {"logs/client-0.rtt.csv": body(2000)},
    }
    for c in cells:
        if c["run_id"] in files:
            raw.ok(c, meta=meta, files=files[c["run_id"]])
    raw.failed(cells[5], {"status": "failed", "reason": "not_ready"})
    return raw.dir  # r7: not run


def test_workers_give_the_tables_of_one_worker(tmp_path: Path, raw_campaign: RawCampaign) -> None:
    raw = _varied_campaign(raw_campaign)
    one, three = tmp_path / "one", tmp_path / "three"
    report = ingest.ingest(raw, one, workers=1)
    # Three workers, two runs each ahead: eight runs arrive out of order and are taken in order.
    assert ingest.ingest(raw, three, workers=3) == report
    for name in ("samples.parquet", "runs.parquet", "timeseries.parquet"):
        a, b = pq.read_table(one / name), pq.read_table(three / name)
        assert b.schema.equals(a.schema, check_metadata=True) and b.equals(a), name
    for name in ("runs.csv", "ingest.json"):
        assert (three / name).read_text() == (one / name).read_text(), name
    # What the tables hold: the bad rows and unreadable files counted once, per file.
    assert (report.runs, report.runs_ok) == (8, 6)  # r3 is ok, its rtt.csv unreadable
    [(bad_file, n_bad)] = report.bad_rows.items()
    assert bad_file.endswith("c0/r2/logs/client-0.rtt.csv") and n_bad == 2
    assert sorted(Path(f).relative_to(raw).as_posix() for f in report.bad_files) == [
        "c0/r4/net.csv",
        "c1/r3/logs/client-0.rtt.csv",
    ]
    samples = pl.read_parquet(three / "samples.parquet")
    assert report.samples == samples.height == 4000 + 501 + 800 + 700 + 2000
    assert samples["run_id"].unique(maintain_order=True).to_list() == ["r0", "r1", "r2", "r4", "r6"]
    assert samples.filter(pl.col("player").is_null())["seq"].to_list() == [1]  # 2**40
    assert samples["send_late_us"].null_count() > 0
    # The file declares the samples table's own Arrow schema, whatever the writer was handed.
    assert pq.read_schema(three / "samples.parquet") == ingest.SAMPLES_ARROW
    runs = pl.read_parquet(three / "runs.parquet")
    assert runs["status"].to_list() == ["ok"] * 5 + ["failed", "ok", "not_run"]
    assert runs["warmup_cut_s"].drop_nulls().len() == 5  # every ok run with RTT rows
    series = pl.read_parquet(three / "timeseries.parquet")
    assert series["run_id"].unique(maintain_order=True).to_list() == ["r0", "r1", "r2", "r4", "r6"]


def test_an_error_in_a_worker_is_raised_as_with_one_worker(
    tmp_path: Path, raw_campaign: RawCampaign
) -> None:
    raw = _varied_campaign(raw_campaign)
    plan = json.loads((raw / "plan.json").read_text())
    del plan["runs"][4]["cell"]["network_profile"]  # a plan no expansion writes
    (raw / "plan.json").write_text(json.dumps(plan))
    raised = []
    for workers in (1, 3):
        with pytest.raises(KeyError) as exc:
            ingest.ingest(raw, tmp_path / str(workers), workers=workers)
        raised.append((type(exc.value), str(exc.value)))
        assert not list((tmp_path / str(workers)).glob("*samples.parquet*"))  # nothing half written
    assert raised[0] == raised[1] == (KeyError, "'network_profile'")
