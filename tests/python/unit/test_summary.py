"""stats.summary and stats.resources: exact known answers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from stats.resources import mean_cpu_cores, peak_rss_bytes
from stats.summary import Percentiles, percentiles, summarize_by_kind


def test_linear_percentiles_known_answers() -> None:
    # Type 7 ("linear"): index h = (n - 1) q; [1, 2, 3, 4]: p50 at h=1.5 -> 2.5,
    # p95 at h=2.85 -> 3.85, p99 at h=2.97 -> 3.97.
    p = percentiles([4, 1, 3, 2])
    assert p is not None
    assert (p.n, p.p50, p.max) == (4, 2.5, 4.0)
    assert p.p95 == pytest.approx(3.85) and p.p99 == pytest.approx(3.97)
    # 1..101: index h = 100 q lands exactly on the values.
    p = percentiles(np.arange(1, 102))
    assert p == Percentiles(n=101, p50=51.0, p95=96.0, p99=100.0, max=101.0)


def test_percentiles_ignore_nan_and_empty() -> None:
    assert percentiles([]) is None
    assert percentiles([np.nan, np.nan]) is None
    p = percentiles([np.nan, 10.0])
    assert p is not None and (p.n, p.p50, p.p99, p.max) == (1, 10.0, 10.0, 10.0)


def test_summarize_by_kind_in_window() -> None:
    t = np.array([0, 1, 2, 3, 4, 5, 6, 7], dtype=np.int64)
    kind = np.array(["net", "net", "net", "app", "lib", "net", "app", "net"])
    rtt = np.array([999.0, 100, 200, 50, 80, 300, 70, 999])
    late = np.array([1.0, 2, 4, 3, np.nan, 6, 5, 1])
    out = summarize_by_kind(t, kind, rtt, late, start_ns=1, end_ns=7)
    net = out["net"]
    assert (net.rtt_us.n, net.rtt_us.p50, net.rtt_us.max) == (3, 200.0, 300.0)
    assert net.send_late_us is not None and net.send_late_us.p50 == 4.0
    assert out["app"].rtt_us.p50 == 60.0  # (50 + 70) / 2
    assert out["lib"].send_late_us is None  # lib has no lateness
    assert set(out) == {"net", "app", "lib"}
    assert "lib" not in summarize_by_kind(t, kind, rtt, late, 5, 8)


@dataclass(frozen=True)
class S:
    t_unix_ns: int
    proc: str
    cpu_user_s: float
    cpu_system_s: float
    cpu_cores: float
    rss_bytes: int


def test_mean_cpu_cores_from_cumulative_seconds() -> None:
    s = 10**9
    rows = [
        S(0 * s, "server", 0.0, 0.0, 0.0, 100),
        S(1 * s, "server", 0.4, 0.1, 0.5, 300),
        S(2 * s, "server", 1.2, 0.3, 1.0, 200),
        S(3 * s, "server", 1.6, 0.4, 0.5, 150),
        S(1 * s, "client-0", 5.0, 0.0, 9.9, 7),
    ]
    # The window [1 s, 4 s) holds the samples at 1, 2 and 3 s: (2.0 - 0.5) CPU-s over 2 s.
    assert mean_cpu_cores(rows, "server", 1 * s, 4 * s) == pytest.approx(0.75)
    # Its end is exclusive, as for every summary: [1 s, 3 s) ends at the sample at 2 s.
    assert mean_cpu_cores(rows, "server", 1 * s, 3 * s) == pytest.approx(1.0)
    assert mean_cpu_cores(rows, "server") == pytest.approx(2.0 / 3)
    assert mean_cpu_cores(rows, "client-0") == 9.9  # one sample: its own rate
    assert mean_cpu_cores(rows, "nobody") is None
    assert peak_rss_bytes(rows, "server") == 300
    assert peak_rss_bytes(rows, "server", 2 * s, None) == 200
    assert peak_rss_bytes(rows, "nobody") is None
