"""Importers of earlier studies' raw data (stats.importers): Net-Celerity and Envirostick.

The real Net-Celerity data is not in the repository: set NETCELERITY_DATA to its directory (the
one with SOURCE.md, workload{1,2}_results/ and system_logs_workload{1,2}/) or place it in
data/external/net-celerity; the tests that need it are skipped otherwise. The Envirostick
fixture (tests/python/data/envirostick) is synthetic: no Envirostick data could be obtained, so
it was written by hand in the log formats of the Envirostick prototypes' loggers.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from stats.importers import RESOURCES_SCHEMA, ImportResult, envirostick, netcelerity
from stats.tables import RUNS_SCHEMA, SAMPLES_SCHEMA
from workflow.cli.main import main as cli_main

from support.paths import REPO, TEST_DATA

ENVIROSTICK_FIXTURE = TEST_DATA / "envirostick"


def _netcelerity_dir() -> Path | None:
    for candidate in (os.environ.get("NETCELERITY_DATA"), REPO / "data/external/net-celerity"):
        if candidate and (Path(candidate) / "workload1_results").is_dir():
            return Path(candidate)
    return None


NC_DIR = _netcelerity_dir()
needs_nc_data = pytest.mark.skipif(
    NC_DIR is None, reason="real Net-Celerity data not found (set NETCELERITY_DATA)"
)
# Mirror's RTT is stamped with 60 FPS frame times: nothing below one frame, 1000/60 ms, written
# with two decimals (anchors: minimum and 1st percentile 16.67 in all four M-* files).
FRAME_MS = 1000 / 60
RTT_FLOOR_US = (FRAME_MS - 0.005) * 1000


def _check_shapes(result: ImportResult) -> None:
    assert dict(result.samples.schema) == SAMPLES_SCHEMA
    assert dict(result.runs.schema) == RUNS_SCHEMA
    assert dict(result.resources.schema) == RESOURCES_SCHEMA
    keys = result.runs.select("campaign", "cell_id", "run_id")
    assert keys.n_unique() == result.runs.height, "run keys must be unique"
    # every sample and resource row belongs to a run of the runs table
    for table in (result.samples, result.resources):
        orphans = (
            table.select("cell_id", "run_id")
            .unique()
            .join(keys, on=["cell_id", "run_id"], how="anti")
        )
        assert orphans.height == 0


def _data_lines(path: Path) -> int:
    """Non-empty lines after the header, counted without the importer's code."""
    with path.open() as f:
        return sum(1 for line in f if line.strip()) - 1


# -- Net-Celerity: the real data ----------------------------------------------------------------


@pytest.fixture(scope="module")
def nc() -> ImportResult:
    assert NC_DIR is not None
    return netcelerity.import_dir(NC_DIR)


@needs_nc_data
def test_netcelerity_rows_match_the_files(nc: ImportResult) -> None:
    _check_shapes(nc)
    assert NC_DIR is not None
    per_run = nc.samples.group_by("cell_id").len()
    runs = nc.runs.join(per_run, on="cell_id", how="left")
    files = sorted(NC_DIR.glob("workload*_results/*_results.csv"))
    assert len(files) == 4
    for f in files:
        proto = netcelerity.PROTOTYPES[f.name.removesuffix("_results.csv")]
        block = f.parent.name.removesuffix("_results")
        mine = runs.filter(
            (pl.col("block") == block)
            & (pl.col("prototype") == proto.prototype)
            & (pl.col("transport") == proto.transport)
        )
        assert mine["len"].sum() == _data_lines(f), f
    # every sample was read: none dropped, no bad rows, every file accounted for
    assert nc.samples.height == sum(_data_lines(f) for f in files)
    assert sum(nc.bad_rows.values()) == 0
    assert len(nc.bad_rows) == 4 + 36  # 4 result files, 36 system logs


@needs_nc_data
def test_netcelerity_player_counts_and_runs(nc: ImportResult) -> None:
    counts = {5, 10, 20, 40, 60, 80}
    assert nc.runs.height == 2 * 3 * len(counts)  # workloads x prototypes x player counts
    for (block, proto, transport), g in nc.runs.group_by("block", "prototype", "transport"):
        assert set(g["players"]) == counts, (block, proto, transport)
    assert set(nc.runs["run_id"]) == {"r1"}
    assert set(nc.runs["status"]) == {"ok"}
    mirror = nc.runs.filter(pl.col("prototype") == "mirror")
    # one run each: exactly N distinct players per N-player run
    assert (mirror["players_connected_max"] == mirror["players"]).all()
    per_run = nc.samples.group_by("cell_id").agg(pl.col("player").n_unique().alias("n"))
    joined = mirror.join(per_run, on="cell_id")
    assert (joined["n"] == joined["players"]).all()
    # DOTS-NFE has system logs but no stored RTT results
    nfe = nc.runs.filter(pl.col("prototype") == "nfe")
    assert nfe.height == 12 and nfe["rtt_lib_p50_us"].is_null().all()
    assert nfe["server_cpu_cores"].is_not_null().all()


@needs_nc_data
def test_netcelerity_rtt_floor_and_their_medians(nc: ImportResult) -> None:
    rtt = nc.samples["rtt_us"].to_numpy()
    assert rtt.min() >= RTT_FLOOR_US
    assert rtt.min() == pytest.approx(16670.0)
    # 16.67 ms is the most common value (anchors: 16.67 and 33.33 the most common)
    assert Counter(rtt.tolist()).most_common(1)[0][0] == pytest.approx(16670.0)
    assert (nc.samples["kind"] == "lib").all() and (nc.samples["source"] == "net-celerity").all()
    # Their figures: medians of all rows, ramp-up included (anchors 1.9 headline table)
    config = nc.runs.select("cell_id", "block", "transport", "players")
    allrows = nc.samples.join(config, on="cell_id")
    med = {
        (b, t, p): m / 1000
        for b, t, p, m in allrows.group_by("block", "transport", "players")
        .agg(pl.col("rtt_us").median())
        .iter_rows()
    }
    assert med[("workload1", "kcp", 5)] == pytest.approx(16.67)
    assert med[("workload1", "kcp", 80)] == pytest.approx(49.42)
    assert med[("workload1", "telepathy", 80)] == pytest.approx(56.78)
    assert med[("workload2", "kcp", 80)] == pytest.approx(45.44)
    assert med[("workload2", "telepathy", 40)] == pytest.approx(26.34)


@needs_nc_data
def test_netcelerity_time_and_resources(nc: ImportResult) -> None:
    # t_s is reconstructed: 0.5 s apart, the last row of every player just before the window end
    last = nc.samples.group_by("cell_id", "player").agg(
        pl.col("t_s").max(), pl.col("seq").max(), pl.len()
    )
    assert np.allclose(last["t_s"].to_numpy(), 120 - 0.25)
    assert (last["seq"] == last["len"] - 1).all()
    assert nc.samples["t_unix_ns"].is_null().all()  # the results have no timestamps
    # CPU from cumulative cpu_times agrees with psutil's cpu_percent / 100 over the window
    psutil_cores = (
        nc.resources.filter(
            (pl.col("metric") == "cpu_cores_psutil") & (pl.col("t_s") > 0)  # first in-window
        )
        .group_by("cell_id")
        .agg(pl.col("value").mean().alias("psutil"))
    )
    both = nc.runs.join(psutil_cores, on="cell_id")
    assert both.height == 36
    rel = (both["server_cpu_cores"] - both["psutil"]).abs() / both["psutil"]
    assert rel.max() < 0.03
    # anchors: 80 players W1 M-KCP eth0 send rate 6.65 MB/s over the last 120 samples
    run = nc.runs.filter(
        (pl.col("block") == "workload1")
        & (pl.col("transport") == "kcp")
        & (pl.col("players") == 80)
    ).row(0, named=True)
    assert run["server_tx_bytes_per_s"] == pytest.approx(6.65e6, rel=0.02)
    assert "NIC eth0" in run["flaws"]
    assert 0.3e9 < run["server_rss_bytes"] < 0.6e9
    nics = set(nc.resources.filter(pl.col("nic").is_not_null())["nic"])
    assert {"eth0", "lo"} <= nics


@needs_nc_data
def test_netcelerity_flaws_listed(nc: ImportResult) -> None:
    text = " ".join(nc.flaws)
    for needle in ("16.67 ms floor", "single run", "warm-up", "host-wide", "DOTS-NFE RTT"):
        assert needle in text, needle
    for row in nc.runs.iter_rows(named=True):
        flaws = row["flaws"].split(";")
        assert "single run per configuration (no repetitions)" in flaws
        assert any("warm-up rule" in f for f in flaws)
        if row["prototype"] == "mirror":
            assert any("16.67 ms floor" in f for f in flaws)
        if row["block"] == "workload2":
            assert any("input traces" in f for f in flaws)


@needs_nc_data
def test_netcelerity_bad_rows_in_a_corrupted_copy(tmp_path: Path) -> None:
    assert NC_DIR is not None
    src = NC_DIR / "workload1_results" / "M-KCP_results.csv"
    lines = src.read_text().splitlines()
    bad = ["5,5", "x,5,16.67", "1,5,", "1,5,abc", "1,5,16.67,9", "1,five,16.67", "1,5,inf"]
    corrupted = [lines[0], *lines[1:100], *bad, *lines[100:]]
    (tmp_path / "workload1_results").mkdir()
    (tmp_path / "workload1_results" / "M-KCP_results.csv").write_text("\n".join(corrupted))
    syslog = NC_DIR / "system_logs_workload1" / "M-KCP" / "system_log_5p_120s.csv"
    sl = syslog.read_text().splitlines()
    sl[10] = sl[10][: len(sl[10]) // 2]  # a line cut in half
    sl[20] = sl[20].replace(sl[20].split(";")[0], "garbage", 1)  # a bad timestamp
    (tmp_path / "system_logs_workload1" / "M-KCP").mkdir(parents=True)
    (tmp_path / "system_logs_workload1" / "M-KCP" / syslog.name).write_text("\n".join(sl))

    result = netcelerity.import_dir(tmp_path)
    assert result.bad_rows == {
        "workload1_results/M-KCP_results.csv": len(bad),
        f"system_logs_workload1/M-KCP/{syslog.name}": 2,
    }
    assert result.samples.height == len(lines) - 1
    assert len(result.problems) == 5 + 2  # at most 5 reasons per file
    res = result.resources.filter(pl.col("metric") == "rss_bytes")
    assert res.height == len(sl) - 1 - 2


# -- Net-Celerity: synthetic data (always runs) -------------------------------------------------


def _synthetic_nc(root: Path) -> None:
    (root / "workload2_results").mkdir(parents=True)
    rows = ["Player_ID,Total_Players,RoundTripDelay_ms"]
    for pid, n in ((1, 4), (2, 6)):
        rows += [f"{pid},2,{16.67 + i:.2f}" for i in range(n)]
    rows += ["2,2,not-a-number", "3,2,0"]  # one bad row, one "no estimate yet"
    (root / "workload2_results" / "M-TP_results.csv").write_text("\r\n".join(rows) + "\r\n")
    header = [
        "timestamp", "proc.cpu_percent", "proc.cpu_times.system", "proc.cpu_times.user",
        "proc.memory_info.rss", "proc.num_threads", "net.bytes_sent.eth0", "net.bytes_recv.eth0",
        "net.bytes_sent.lo", "net.bytes_recv.lo", "cpu.percent",
    ]  # fmt: skip
    lines = [";".join(header)]
    for i in range(130):  # 1.0 s apart; 0.5 core, 1000 B/s out and 500 B/s in on eth0
        t = 1.7e12 + i * 1000.0
        lines.append(
            f"{t};50.0;{0.1 * i:.2f};{0.4 * i:.2f};{400_000_000 + i};130;"
            f"{1000 * i};{500 * i};{7 * i};{7 * i};3.5"
        )
    lines.insert(50, "1.7e12;50.0")  # a cut line
    d = root / "system_logs_workload2" / "M-TP"
    d.mkdir(parents=True)
    (d / "system_log_2p_120s.csv").write_text("\n".join(lines) + "\n")
    (root / "SOURCE.md").write_text("commit 49d8b852c203ef28b628dc364747091243ff7ad9\n")


def test_netcelerity_synthetic(tmp_path: Path) -> None:
    _synthetic_nc(tmp_path)
    result = netcelerity.import_dir(tmp_path)
    _check_shapes(result)
    assert result.bad_rows == {
        "workload2_results/M-TP_results.csv": 1,
        "system_logs_workload2/M-TP/system_log_2p_120s.csv": 1,
    }
    assert result.samples.height == 10
    run = result.runs.row(0, named=True)
    assert run["cell_id"] == "mirror-telepathy-p2-active-blocks=10-lan-d120"
    assert run["workload"] == "active" and json.loads(run["params"]) == {"blocks": "10"}
    assert run["commit"] == "49d8b852c203ef28b628dc364747091243ff7ad9"
    assert run["server_cpu_cores"] == pytest.approx(0.5)
    assert run["server_tx_bytes_per_s"] == pytest.approx(1000.0)
    assert run["server_rx_bytes_per_s"] == pytest.approx(500.0)
    assert run["server_rss_bytes"] == 400_000_129
    assert "1 row(s) with RTT 0" in run["flaws"]
    # player 2 has 6 rows: t_s 117.25 ... 119.75; all in the window
    p2 = result.samples.filter(pl.col("player") == 2)["t_s"].to_list()
    assert p2 == [117.25, 117.75, 118.25, 118.75, 119.25, 119.75]
    rtts = [16.67 + i for i in range(4)] + [16.67 + i for i in range(6)]
    assert run["rtt_lib_p50_us"] == pytest.approx(np.median(rtts) * 1000)
    # host-wide counters land under proc "host", per NIC
    host = result.resources.filter(pl.col("proc") == "host")
    assert set(host["nic"].drop_nulls()) == {"eth0", "lo"}


def test_netcelerity_cli_writes_parquet_atomically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _synthetic_nc(tmp_path / "in")
    out = tmp_path / "out"
    assert cli_main(["import", "netcelerity", str(tmp_path / "in"), "--out", str(out)]) == 0
    # the three tables and no temporary file left behind
    names = sorted(p.name for p in out.iterdir())
    assert names == ["resources.parquet", "runs.parquet", "samples.parquet"]
    expected = netcelerity.import_dir(tmp_path / "in")
    assert pl.read_parquet(out / "samples.parquet").equals(expected.samples)
    assert pl.read_parquet(out / "runs.parquet").equals(expected.runs)
    printed = capsys.readouterr().out
    assert "bad rows:" in printed and "M-TP_results.csv" in printed


# -- Envirostick: synthetic fixture in the documented format -------------------------------------


def test_envirostick_fixture_round_trip(tmp_path: Path) -> None:
    result = envirostick.import_dir(ENVIROSTICK_FIXTURE)
    _check_shapes(result)
    assert all(v == 0 for v in result.bad_rows.values()) and len(result.bad_rows) == 5
    runs = {r["prototype"]: r for r in result.runs.iter_rows(named=True)}
    assert set(runs) == {"mirror", "fishnet"}
    # Mirror: configuration from the directory names, duration from the logs' span
    m = runs["mirror"]
    assert (m["workload"], json.loads(m["params"]), m["players"]) == ("world", {"size": "S"}, 1)
    assert m["cell_id"] == "mirror-kcp-p1-world-size=S-lan-d10"
    assert m["players_connected_max"] == 1 and m["server_rss_bytes"] == 916 * 1024 * 1024
    assert "directory names" in m["flaws"] and "duration not recorded" in m["flaws"]
    # FishNet: configuration from run.json
    f = runs["fishnet"]
    assert f["cell_id"] == "fishnet-tugboat-p2-rpc-toggle-interval=0.2-lan-d6"
    assert f["duration_s"] == 6.0 and f["rtt_lib_p50_us"] == 34000.0
    assert "RoundTripTime" in f["flaws"] and "directory names" not in f["flaws"]
    # every data row with an RTT estimate is a sample; the first row of each player has none
    player_logs = sorted(ENVIROSTICK_FIXTURE.rglob("player_log_*.csv"))
    assert result.samples.height == sum(_data_lines(p) - 1 for p in player_logs)
    assert "row(s) with RTT 0" in m["flaws"] and "row(s) with RTT 0" in f["flaws"]
    # t_s: 0 at the first row of the first player; timestamps have 1 s resolution
    fs = result.samples.filter(pl.col("cell_id") == f["cell_id"])
    assert fs["t_s"].min() == 0.0  # player 1's 2nd row shares its 1st row's second
    assert all(float(t).is_integer() for t in fs["t_s"])
    first_ns = fs.filter(pl.col("player") == 1)["t_unix_ns"].min()
    # 2024-07-03 10:41:10 in Amsterdam (CEST, UTC+2) = 08:41:10 UTC
    assert first_ns == (1719996070) * 1_000_000_000
    assert sorted(set(fs["player"])) == [1, 2]
    assert fs.filter(pl.col("player") == 1)["seq"].min() == 1  # seq 0 was the RTT-0 row
    # server and client resources, without the profilers' "0 = not recorded" first rows
    res = result.resources
    assert set(res["proc"]) == {"server", "client-1", "client-2"}
    assert (res.filter(pl.col("metric") == "memory_bytes")["value"] > 0).all()
    # round trip through the CLI's Parquet files
    out = tmp_path / "out"
    assert cli_main(["import", "envirostick", str(ENVIROSTICK_FIXTURE), "--out", str(out)]) == 0
    assert pl.read_parquet(out / "samples.parquet").equals(result.samples)
    assert pl.read_parquet(out / "runs.parquet").equals(result.runs)
    assert pl.read_parquet(out / "resources.parquet").equals(result.resources)


def test_envirostick_bad_rows_sessions_and_zero_rtt(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    shutil.copytree(ENVIROSTICK_FIXTURE, root)
    mirror = root / "mirror" / "resource-load-small" / "mirror_logs"
    player = next(mirror.glob("player_log_*.csv"))
    lines = player.read_text().splitlines()
    bad = [
        "2024-07-02 14:03:30,0,4,08,0,1,5,486,2,0",  # decimal commas: 10 fields
        "02/07/2024 14:03:30,0,4.08,0,1.5,486,2.0",  # another timestamp format
        "2024-07-02 14:03:30,0,4.08,0,-1,486,2.0",  # negative RTT
        lines[0],  # a repeated header
    ]
    player.write_text("\n".join([lines[0], *lines[1:5], *bad, *lines[5:]]) + "\n")
    # the server was started again in the same directory: a second session, after the first
    server = mirror / "server_log.csv"
    extra = [
        envirostick.SERVER_HEADER,
        "2024-07-02 15:10:00,0.0031127,0,7501,0,0.0",
        "2024-07-02 15:10:01,0.5038212,0,7501,915,4.4",
    ]
    server.write_text(server.read_text() + "\n".join(extra) + "\n")
    # NGO: GetCurrentRtt returns 0 on clients, so every row has RTT 0
    ngo = root / "ngo" / "rpc-impact" / "mirror_logs"
    ngo.mkdir(parents=True)
    rows = [f"2024-07-04 09:12:{10 + i // 2:02d},0,4.08,0,0,455,1.8" for i in range(8)]
    log = ngo / "player_log_0d8f2c44-7b1e-4a93-b6c5-2e9a71f03d6b.csv"
    log.write_text("\n".join([envirostick.PLAYER_HEADER, *rows]) + "\n")

    result = envirostick.import_dir(root)
    _check_shapes(result)
    rel = str(player.relative_to(root))
    assert result.bad_rows[rel] == len(bad)
    assert sum(result.bad_rows.values()) == len(bad)
    # the players' session, and the second one with the server alone (0 players: another cell)
    mirror_runs = result.runs.filter(pl.col("prototype") == "mirror").sort("players")
    assert mirror_runs["players"].to_list() == [0, 1]
    assert mirror_runs["players_connected_max"].to_list() == [0, 1]
    assert all("several sessions" in f for f in mirror_runs["flaws"])
    assert mirror_runs.filter(pl.col("rtt_lib_p50_us").is_null()).height == 1
    n = result.runs.filter(pl.col("prototype") == "ngo").row(0, named=True)
    assert n["workload"] == "rpc-toggle" and n["rtt_lib_p50_us"] is None
    assert "8 row(s) with RTT 0" in n["flaws"] and "no RTT estimate" in n["flaws"]
    assert "issue #2988" in n["flaws"]
    assert result.samples.filter(pl.col("cell_id") == n["cell_id"]).height == 0
