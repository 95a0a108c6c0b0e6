"""Per-second series of a run: RTT from the samples, CPU/RSS from the sampler, exact traffic from
the server's veth counters, all aligned to the measurement window's start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from monitors.sampler import read_monitor
from stats import timeseries
from stats.window import Window

START_NS = 1_700_000_000_000_000_000


def _samples() -> pl.DataFrame:
    # Second 0: RTTs 1..5 ms; second 1: 10 ms x 3; plus an app-probe sample that must be ignored.
    t = [0.1, 0.2, 0.3, 0.4, 0.5, 1.1, 1.2, 1.3, 0.6]
    rtt = [1000, 2000, 3000, 4000, 5000, 10000, 10000, 10000, 99999]
    kind = ["net"] * 8 + ["app"]
    return pl.DataFrame({"t_s": t, "rtt_us": rtt, "kind": kind})


def _by(frame: pl.DataFrame, metric: str) -> dict[float, float]:
    sub = frame.filter(pl.col("metric") == metric)
    return dict(zip(sub["t_s"].to_list(), sub["value"].to_list(), strict=True))


def test_rtt_per_second() -> None:
    out = timeseries.rtt_per_second(_samples())
    assert _by(out, "rtt_net_p50_us") == {0.0: 3000.0, 1.0: 10000.0}
    assert _by(out, "rtt_net_n") == {0.0: 5.0, 1.0: 3.0}
    assert _by(out, "rtt_net_sd_us")[0.0] == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) * 1000)
    assert _by(out, "rtt_net_sd_us")[1.0] == 0.0
    assert _by(out, "rtt_net_p95_us")[0.0] == pytest.approx(
        np.percentile([1, 2, 3, 4, 5], 95) * 1000
    )


def test_traffic_rates_from_cumulative_counters() -> None:
    # The server's veth: 1000 B/s in, 500 B/s out, read every 0.5 s from 1 s before the window;
    # the client-side interface must be ignored.
    t = [START_NS + int(k * 0.5e9) for k in range(-2, 6)]
    rows = {
        "t_unix_ns": t + t,
        "iface": ["nsk-ab-s0"] * len(t) + ["nsk-ab-c0"] * len(t),
        "rx_bytes": [500 * k for k in range(len(t))] + [9 * 10**6 * k for k in range(len(t))],
        "tx_bytes": [250 * k for k in range(len(t))] + [0] * len(t),
    }
    out = timeseries.traffic_per_second(pl.DataFrame(rows), START_NS)
    rx, tx = _by(out, "server_rx_bytes_per_s"), _by(out, "server_tx_bytes_per_s")
    assert set(rx) == {-1.0, 0.0, 1.0, 2.0}  # midpoints of each 0.5 s interval, binned
    assert all(v == pytest.approx(1000.0) for v in rx.values())
    assert all(v == pytest.approx(500.0) for v in tx.values())


def test_run_series_reads_monitor_and_reports_unreadable_files(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    run.mkdir()
    lines = ["t_unix_ns,proc,cpu_user_s,cpu_system_s,cpu_cores,rss_bytes,num_threads"]
    for k in range(4):
        t = START_NS + int(k * 0.5e9)
        lines.append(f"{t},server,0,0,{0.1 * (k + 1):.1f},{1000 * (k + 1)},4")
        lines.append(f"{t},client-0,0,0,0.9,99999,4")
    (run / "monitor.csv").write_text("\n".join(lines) + "\n")
    (run / "net.csv").write_text("this is not a counter file\n\x00\x01")
    ids = {"campaign": "c", "cell_id": "cell", "run_id": "r1"}
    window = Window(START_NS, None)
    out, unread = timeseries.run_series(run, _samples(), window, ids, read_monitor(run))
    assert _by(out, "server_cpu_cores") == {0.0: pytest.approx(0.15), 1.0: pytest.approx(0.35)}
    assert _by(out, "server_rss_bytes") == {0.0: 2000.0, 1.0: 4000.0}
    assert out.schema == pl.Schema(timeseries.SCHEMA)
    assert set(out["cell_id"].unique()) == {"cell"}
    assert list(unread) == [str(run / "net.csv")]


def test_partial_last_second_after_the_window_is_left_out() -> None:
    ids = {"campaign": "c", "cell_id": "cell", "run_id": "r1"}
    window = Window(START_NS, START_NS + int(1.5e9))
    out, _ = timeseries.run_series(Path("/nonexistent"), _samples(), window, ids)
    assert set(out["t_s"].to_list()) == {0.0}  # second 1 reaches past the 1.5 s window
