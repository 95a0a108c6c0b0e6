"""Interface counters in this process's namespace: parsing /proc/net/dev, reading counters, the
CSV sampler on lo, the idle baseline and its subtraction (exact accounting across a sandbox:
e2e/run/test_netcounters_sandbox.py)."""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from monitors import netcounters
from monitors.netcounters import Baseline, Counters, NetSampler

NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     284       2    0    0    0     0          0         0      284       2    0    0    0     0       0          0
nsk-ab12cd-s0: 2556084   18002    1    3    0     0          0         0  3070300   18150    0    7    0     0       0          0
"""  # noqa: E501


def test_parse_net_dev() -> None:
    parsed = netcounters.parse_net_dev(NET_DEV)
    assert parsed["lo"] == Counters(284, 2, 0, 0, 284, 2, 0, 0)
    s0 = parsed["nsk-ab12cd-s0"]
    assert (s0.rx_bytes, s0.rx_packets, s0.rx_errors, s0.rx_dropped) == (2556084, 18002, 1, 3)
    assert (s0.tx_bytes, s0.tx_packets, s0.tx_errors, s0.tx_dropped) == (3070300, 18150, 0, 7)
    assert (s0 - parsed["lo"]).rx_bytes == 2556084 - 284
    assert s0.as_dict()["tx_dropped"] == 7


def test_read_own_namespace() -> None:
    counters = netcounters.read_counters()
    assert "lo" in counters
    with netcounters.CounterSource() as src:
        assert "lo" in src.read()
    with pytest.raises(ValueError, match="not both"):
        netcounters.read_counters(pid=1, netns="x")


def _baseline(rate: float, sd: float, slices: int = 10, slice_s: float = 0.5) -> Baseline:
    return Baseline(
        iface="eth0",
        duration_s=slices * slice_s,
        slice_s=slice_s,
        slices=slices,
        rx_bytes_per_s=rate,
        rx_packets_per_s=rate / 100,
        tx_bytes_per_s=rate,
        tx_packets_per_s=rate / 100,
        rx_bytes_sd=sd,
        rx_packets_sd=sd / 100,
        tx_bytes_sd=sd,
        tx_packets_sd=sd / 100,
    )


def test_subtract_baselines_flags_negative_and_noise() -> None:
    base = {"eth0": _baseline(rate=1000.0, sd=50.0)}
    # 10 s run: 10 000 B idle expected; noise = 3 x sqrt(20 x 50^2 + 20^2 x 50^2 / 10)
    big = {"eth0": Counters(60_000, 600, 0, 0, 9_000, 90, 0, 0)}
    rows = {r.field: r for r in netcounters.subtract_baselines(big, base, 10.0)}
    rx = rows["rx_bytes"]
    assert rx.baseline == pytest.approx(10_000) and rx.corrected == pytest.approx(50_000)
    assert rx.noise == pytest.approx(3 * (20 * 50**2 + 400 * 50**2 / 10) ** 0.5)
    assert not rx.negative and not rx.within_noise
    tx = rows["tx_bytes"]
    assert tx.corrected == pytest.approx(-1_000) and tx.negative and tx.within_noise
    assert netcounters.subtract_baselines(big, {}, 10.0) == []  # no baseline, no row


def test_measure_baseline_of_the_host() -> None:
    t0 = time.monotonic()
    base = netcounters.measure_baseline(0.2, 0.05)
    assert time.monotonic() - t0 < 1.0
    assert "lo" in base
    lo = base["lo"]
    assert lo.slices == 4 and lo.rx_bytes_per_s >= 0 and lo.rx_bytes_sd >= 0
    with pytest.raises(ValueError, match="slice_s"):
        netcounters.measure_baseline(0.1, 0.5)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_net_sampler_writes_rows_per_sample(tmp_path: Path) -> None:
    out = tmp_path / "net.csv"
    with NetSampler(out, interval_s=0.05, ifaces=["lo"]) as sampler:
        time.sleep(0.2)
        # flushed per sample: readable while the sampler runs
        assert len(_read_csv(out)) >= 2
    rows = _read_csv(out)
    assert list(rows[0]) == list(netcounters.CSV_COLUMNS)
    assert {r["iface"] for r in rows} == {"lo"}
    assert len(rows) >= 4  # first (start), a few on the grid, last (stop)
    ts = [int(r["t_unix_ns"]) for r in rows]
    assert ts == sorted(ts)
    assert sampler.delta("lo").rx_bytes == int(rows[-1]["rx_bytes"]) - int(rows[0]["rx_bytes"])
    with pytest.raises(ValueError, match="nope0 not found"):
        NetSampler(None, ifaces=["nope0"]).start()
