"""stats.window: one rule for "inside the measurement window", whichever summary asks."""

from __future__ import annotations

import numpy as np
import polars as pl

from stats.window import Window

S = 10**9
START = 1_700_000_000 * S


def test_start_is_inclusive_and_end_exclusive() -> None:
    w = Window(START, START + 60 * S)
    t = np.array([START - 1, START, START + 60 * S - 1, START + 60 * S], dtype=np.int64)
    assert w.contains(t).tolist() == [False, True, True, False]
    assert [w.contains_ns(int(x)) for x in t] == [False, True, True, False]


def test_missing_bounds_are_open() -> None:
    t = np.array([0, START, START * 2], dtype=np.int64)
    assert Window(None, None).contains(t).all()
    assert Window.of({"window_start_unix_ns": START}).contains(t).tolist() == [False, True, True]
    assert Window.of({}).length_s is None
    assert np.isnan(Window.of(None).t_s(t)).all()


def test_window_from_meta_and_seconds_since_its_start() -> None:
    meta = {"window_start_unix_ns": START, "window_end_unix_ns": START + int(1.5 * S)}
    w = Window.of(meta)
    assert w.length_s == 1.5
    # Epoch nanoseconds differ in the last digits: t_s must see them (no float rounding first).
    assert w.t_s([START - S, START + 1, START + S]).tolist() == [-1.0, 1e-9, 1.0]
    frame = pl.DataFrame({"t": [START + S // 2]})
    assert frame.select(w.t_s_expr(pl.col("t")))["t"].to_list() == [0.5]


def test_a_bin_is_inside_only_when_it_lies_wholly_inside() -> None:
    w = Window(START, START + int(2.5 * S))  # 2.5 s: bins 0 and 1 are whole, bin 2 is not
    bins = np.array([-1.0, 0.0, 1.0, 2.0])
    assert w.bin_inside(bins).tolist() == [False, True, True, False]
    # A series of the whole run up to the window's end keeps the bins before the window.
    assert w.bin_ends_by_end(bins).tolist() == [True, True, True, False]
    frame = pl.DataFrame({"k": bins})
    kept = frame.filter(w.bin_ends_by_end_expr(pl.col("k")))["k"].to_list()
    assert kept == [-1.0, 0.0, 1.0]
