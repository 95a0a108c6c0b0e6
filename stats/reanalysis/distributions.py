"""Per-run distributions of the re-analysis: Mirror's frame quantisation, per-second medians and
SDs, and histogram shares.

Mirror stamps pings with frame time and runs headless at targetFrameRate = sendRate = 60, so
its RTT comes in whole 60 FPS frames (anchors 1.6, 1.8); the logs print it with 2 decimals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import polars as pl

FRAME_MS: Final = 1000.0 / 60.0
FRAME_TOLERANCE_MS: Final = 0.05
RTT_RESOLUTION_MS: Final = 0.01  # PlayerLogging.cs formats the RTT with F2
HISTOGRAM_BIN_MS: Final = 0.1
HISTOGRAM_RANGE_MS: Final = (10.0, 110.0)


@dataclass(frozen=True, slots=True)
class FrameFloor:
    """How strongly RTT values sit on whole frames."""

    samples: int
    frac_on_frame_multiple: float  # within tolerance of k * frame, k >= 1
    frac_at_floor: float  # within tolerance of one frame
    rtt_min_ms: float
    rtt_mode_ms: float  # the most common value


def on_frame_multiple(
    rtt_ms: npt.ArrayLike, frame_ms: float = FRAME_MS, tolerance_ms: float = FRAME_TOLERANCE_MS
) -> npt.NDArray[np.bool_]:
    """Mask: at or within tolerance_ms of a whole multiple (>= 1) of frame_ms."""
    v = np.asarray(rtt_ms, dtype=np.float64)
    k = np.maximum(np.rint(v / frame_ms), 1.0)
    # 1e-9: the logs' decimal values (16.67 for 16.666...) are not exact in binary
    with np.errstate(invalid="ignore"):
        return np.asarray(np.abs(v - k * frame_ms) <= tolerance_ms + 1e-9, dtype=bool)


def frame_floor(
    rtt_ms: npt.ArrayLike, frame_ms: float = FRAME_MS, tolerance_ms: float = FRAME_TOLERANCE_MS
) -> FrameFloor:
    """The quantisation of one run's RTT values (non-finite values are ignored)."""
    v = np.asarray(rtt_ms, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return FrameFloor(0, math.nan, math.nan, math.nan, math.nan)
    values, counts = np.unique(v, return_counts=True)
    at_floor = np.abs(v - frame_ms) <= tolerance_ms + 1e-9
    return FrameFloor(
        int(v.size),
        float(np.mean(on_frame_multiple(v, frame_ms, tolerance_ms))),
        float(np.mean(at_floor)),
        float(v.min()),
        float(values[np.argmax(counts)]),
    )


def expected_fraction_unquantised(
    frame_ms: float = FRAME_MS,
    tolerance_ms: float = FRAME_TOLERANCE_MS,
    resolution_ms: float = RTT_RESOLUTION_MS,
    frames: int = 600,
) -> float:
    """Share of values within tolerance of a frame multiple if values spread evenly: the share
    of the printable values (resolution_ms apart) over ``frames`` frames that are. Counted, not
    2 * tolerance / frame, because the frame multiples mostly fall between printable values
    (16.666... has 10 printable values within 0.05 ms, 50.00 has 11)."""
    steps = np.arange(
        round(frame_ms / resolution_ms), round((frames + 1) * frame_ms / resolution_ms)
    )
    return float(np.mean(on_frame_multiple(steps * resolution_ms, frame_ms, tolerance_ms)))


def by_second(t_s: npt.ArrayLike, values: npt.ArrayLike) -> pl.DataFrame:
    """Per 1-s bin [s, s + 1): median, SD (population, as the thesis's equation 5.1) and count."""
    frame = pl.DataFrame(
        {
            "t_s": np.asarray(t_s, dtype=np.float64),
            "v": np.asarray(values, dtype=np.float64),
        }
    ).filter(pl.col("t_s").is_finite() & pl.col("v").is_finite())
    return (
        frame.with_columns(pl.col("t_s").floor().alias("second"))
        .group_by("second")
        .agg(
            pl.col("v").median().alias("median"),
            pl.col("v").std(ddof=0).alias("sd"),
            pl.len().alias("samples"),
        )
        .sort("second")
    )


def histogram_share(values: npt.ArrayLike, bin_width: float, lo: float, hi: float) -> pl.DataFrame:
    """Share (%) of all values in each bin [k - 1/2, k + 1/2) * bin_width, for the bin centres
    k * bin_width in [lo, hi)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return pl.DataFrame(schema={"bin_ms": pl.Float64, "share_pct": pl.Float64})
    # 1e-6 of a bin: decimal values on a bin edge (24.65 / 0.1 = 246.4999...) go up, as the
    # half-open bins say, so every bin holds the same number of printable values.
    k = np.floor(v / bin_width + 0.5 + 1e-6)
    inside = (k * bin_width >= lo - 1e-9) & (k * bin_width < hi - 1e-9)
    ks, counts = np.unique(k[inside], return_counts=True)
    return pl.DataFrame(
        {"bin_ms": np.round(ks * bin_width, 6), "share_pct": 100.0 * counts / v.size}
    )
