"""Nightly history: how a campaign's results change from night to night.

- store.py: the history store, data/history/<campaign>/<night>.csv (append-only; `netstick
  history import|list|show`), one row per cell and night with its medians, run values and
  provenance, and its series in apache-otava's CSV shape.
- trends.py: per-cell trends with change points over results directories, and the verdicts of the
  newest night against the one before (`netstick history compute`, `netstick compare`);
  report/history.py draws them.
- decide.py: the newest night of the store against a rolling baseline of the last k nights on
  the same hardware, and the confirming re-run of the suspected cells (`netstick history
  decide|confirm-plan|confirm`); report/history.qmd draws regressions.json and night-trends.csv.

What all three share is here: the error they raise, the default metric and effect, and a
metric's unit.
"""

from __future__ import annotations

from typing import Final

DEFAULT_METRIC: Final = "rtt_net_p50_us"
DEFAULT_MIN_EFFECT: Final = 0.05
# A smaller minimum practical effect where the metric's own noise allows it: callgrind's
# instructions per message differ about 1 % from run to run (`netstick bench noise`), so a 2 %
# growth of a library's work per message is both real and detectable, where 5 % would hide the
# 3-5 % regressions a nightly is for.
MIN_EFFECT_BY_METRIC: Final = {"server_instr_per_msg": 0.02}
# A runs-table column's stored unit from its name's suffix (the tables carry units in names).
UNIT_SUFFIXES: Final = (
    ("_us_per_msg", "us/msg"), ("_instr_per_msg", "instr/msg"),
    ("_bytes_per_s", "bytes/s"), ("_us", "us"), ("_ms", "ms"), ("_s", "s"),
    ("_cores", "cores"), ("_bytes", "bytes"), ("_ratio", "ratio"), ("_fraction", "fraction"),
)  # fmt: skip


class HistoryError(ValueError):
    """A results directory or the history store cannot be used; the message names it."""


def min_effect_of(metric: str, min_effect: float = DEFAULT_MIN_EFFECT) -> float:
    """The minimum practical effect a verdict on metric uses: min_effect, or the metric's own
    smaller one (MIN_EFFECT_BY_METRIC)."""
    return min(min_effect, MIN_EFFECT_BY_METRIC.get(metric, min_effect))


def metric_unit(metric: str) -> str:
    """The stored unit of a runs-table column ("count" when its name carries none)."""
    return next((u for suffix, u in UNIT_SUFFIXES if metric.endswith(suffix)), "count")
