"""The runs table (runs.csv, written by ingest) has a row for every planned run, whatever state
its data is in."""

from __future__ import annotations

import csv
from pathlib import Path

from monitors.sampler import CSV_COLUMNS
from prototypes.contract import manifest as manifests
from stats import ingest
from workflow.files import REPO

from support.raw_campaign import RawCampaign, cell


def test_every_planned_run_gets_a_row_and_bad_data_is_reported(
    tmp_path: Path, raw_campaign: RawCampaign
) -> None:
    garbled, failed, never = cell("c1", "r1"), cell("c1", "r2"), cell("c2", "r1")
    raw_campaign.plan([garbled, failed, never])
    # r1 of c1: ok record, but its run directory holds garbage
    raw_campaign.ok(
        garbled, files={"meta.json": "{not json", "logs/client-0.rtt.csv": "garbage\n1,2\n"}
    )
    # r2 of c1: failed for good, with two kept attempts
    raw_campaign.failed(failed, {"status": "failed", "reason": "not_ready"}, {"a": {}, "b": {}})
    # c2 never ran
    raw = raw_campaign.dir
    ingest.ingest(raw, tmp_path / "results")
    out = tmp_path / "results" / "runs.csv"
    rows = {(r["cell_id"], r["run_id"]): r for r in csv.DictReader(out.open())}
    assert len(rows) == 3
    assert rows[("c1", "r1")]["status"] == "ok"
    assert "client-0.rtt.csv" in rows[("c1", "r1")]["read_error"]
    assert rows[("c1", "r2")]["status"] == "failed"
    assert rows[("c1", "r2")]["reason"] == "not_ready"
    assert rows[("c1", "r2")]["failed_attempts"] == "2"
    assert rows[("c2", "r1")]["status"] == "not_run"
    # Every row names the transport's library and the version measured, pinned resolved from
    # the manifest, so that the history files a night under real versions.
    tcp = manifests.load(REPO / "prototypes/reference/prototype.yaml").transport("tcp")
    assert {(r["library"], r["library_release"]) for r in rows.values()} == {
        (tcp.library, tcp.version)
    }


def test_probe_loss_ratio_counts_lost_over_sent_of_one_kind() -> None:
    from stats.runs_table import probe_loss_ratio

    events = [
        {"event": "probes", "value": "100", "detail": "kind=net echoed=90 lost=8 inflight=2"},
        {"event": "probes", "value": "100", "detail": "kind=net echoed=98 lost=2 inflight=0"},
        {"event": "probes", "value": "50", "detail": "kind=app echoed=0 lost=50 inflight=0"},
        {"event": "connect", "value": "1.0", "detail": ""},
    ]
    assert probe_loss_ratio(events) == 0.05
    assert probe_loss_ratio(events, "app") == 1.0
    assert probe_loss_ratio(events, "lib") is None


def test_a_run_directory_is_measured_alike_on_its_own_and_through_the_walker(
    raw_campaign: RawCampaign,
) -> None:
    from stats.runs_table import measure, read_run, read_run_dir
    from workflow import layout

    c = cell("c1", "r1")
    raw_campaign.plan([c])
    t0 = 1_700_000_000_000_000_000
    meta = {"window_start_unix_ns": t0, "window_end_unix_ns": t0 + 10 * 10**9, "overhead_s": 1.5}
    rtt = "t_unix_ns,player,seq,rtt_us,kind,send_late_us\n" + "".join(
        f"{t0 + i * 10**9},0,{i},{500 + i}.0,net,3\n" for i in range(10)
    )
    monitor = (
        ",".join(CSV_COLUMNS)
        + "\n"
        + "".join(f"{t0 + i * 10**9},server,{i / 2},0.0,0.5,1000,4\n" for i in range(1, 10))
    )
    run = raw_campaign.ok(
        c, meta=meta, files={"logs/client-0.rtt.csv": rtt, "monitor.csv": monitor}
    )
    raw = raw_campaign.dir
    [walked] = layout.walk(raw)
    alone = read_run_dir(run)
    assert alone.unread == {} and alone.meta == meta
    row = measure(alone)
    assert row == measure(read_run(walked))
    assert (row["overhead_s"], row["rtt_net_samples"], row["server_cpu_cores"]) == (1.5, 10, 0.5)
    (run / "meta.json").unlink()
    assert "meta.json" in next(iter(read_run_dir(run).unread))
