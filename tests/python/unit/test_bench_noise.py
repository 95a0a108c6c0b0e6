"""bench noise's figures: the spread of identical runs and the callgrind keep-up verdict."""

from __future__ import annotations

import math
import statistics

from stats import power
from workflow.bench import noise


def test_spread_gives_cv_range_and_the_detectable_change_at_6_against_6() -> None:
    values = [100.0, 102.0, 98.0, 101.0, None, 99.0]
    got = noise.spread(values)
    vals = [100.0, 102.0, 98.0, 101.0, 99.0]
    assert got["n"] == 5 and got["median"] == 100.0
    assert math.isclose(got["cv_pct"], 100 * statistics.stdev(vals) / statistics.fmean(vals))
    assert math.isclose(got["range_pct"], 4.0)
    mde = power.minimum_detectable_ratio(power.log_sd(vals), 6, 6)
    assert math.isclose(got["mde_pct"], 100 * (mde - 1))
    # One value has a median but no spread; none has nothing.
    assert noise.spread([5.0])["median"] == 5.0 and noise.spread([5.0])["cv_pct"] is None
    assert noise.spread([])["n"] == 0


def test_callgrind_keeps_up_while_its_messages_and_ticks_reach_the_unprofiled_ones() -> None:
    runs = [
        {"players": 20, "profiler": None, "msgs_per_s": 1000.0, "ticks_per_s": 60.0},
        {"players": 20, "profiler": "callgrind", "msgs_per_s": 990.0, "ticks_per_s": 59.0},
        {"players": 200, "profiler": None, "msgs_per_s": 30000.0, "ticks_per_s": 60.0},
        {"players": 200, "profiler": "callgrind", "msgs_per_s": 25000.0, "ticks_per_s": 45.0},
        {"players": 400, "profiler": None, "ok": False, "msgs_per_s": None, "ticks_per_s": None},
    ]
    rows = {r["players"]: r for r in noise.keep_up(runs, 60.0)}
    assert rows[20]["kept_up"] is True and rows[20]["msgs_share"] == 0.99
    assert rows[200]["kept_up"] is False and rows[200]["ticks_share"] == 0.75
    assert rows[400]["kept_up"] is None  # not measured: no verdict
