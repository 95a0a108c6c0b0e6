"""bench-sensitivity's analysis (workflow/bench/sensitivity.py, sensitivity_nights.py): nights
drawn from measured rounds and decided by the nightly's own code, on synthetic pools whose
answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workflow.bench import sensitivity
from workflow.bench import sensitivity_nights as nights


def pool_of(factors: dict[str, float], sd: float, rounds: int = 12, seed: int = 0,
            drift_sd: float = 0.0) -> dict[str, dict[int, float]]:  # fmt: skip
    """condition -> round -> value: log-normal runs around 1000 x factor, with a drift shared by
    every condition of a round."""
    rng = np.random.default_rng(seed)
    drift = rng.normal(0.0, drift_sd, rounds)
    return {
        c: {k + 1: 1000.0 * f * math.exp(drift[k] + rng.normal(0.0, sd)) for k in range(rounds)}
        for c, f in factors.items()
    }


def test_a_planted_regression_well_above_the_noise_is_flagged_and_confirmed_every_night():
    pool = pool_of({"a": 1.0, "p": 1.10}, sd=0.005)
    c = nights.Comparison("cpu+10%", "server_instr_per_msg", "a", "p", 10.0, "callgrind")
    d = nights.draw_nights(pool, c, nights=20, seed=1)
    assert (d["nights"], d["flagged"], d["confirmed"]) == (20, 20, 20)
    assert d["confirmed_share"] == 1.0 and d["pool_rounds"] == 12


def test_identical_code_raises_no_confirmed_alarm_and_too_few_rounds_are_named():
    pool = pool_of({"a": 1.0, "b": 1.0}, sd=0.01)
    c = nights.Comparison("A/A", "server_instr_per_msg", "a", "b", None, "callgrind")
    d = nights.draw_nights(pool, c, nights=30, seed=2)
    assert d["nights"] == 30 and d["confirmed"] == 0
    short = {k: dict(list(v.items())[:8]) for k, v in pool.items()}
    d = nights.draw_nights(short, c, nights=5, seed=2)
    assert d["nights"] == 0 and d["note"] == "8 usable rounds: a night and its re-run need 12"


def test_a_change_below_the_metrics_minimum_effect_is_never_flagged():
    # RTT's minimum effect is 5 %: a clean 3 % change is real but below it.
    pool = pool_of({"a": 1.0, "p": 1.03}, sd=0.002)
    c = nights.Comparison("rtt+3%", "rtt_net_p50_us", "a", "p", 3.0)
    assert nights.draw_nights(pool, c, nights=10, seed=3)["flagged"] == 0


def test_planted_size_detectable_and_noise_parts_are_measured_from_the_pool():
    pool = pool_of({"a": 1.0, "b": 1.0, "p": 1.05}, sd=0.01, drift_sd=0.1, seed=4)
    size = nights.planted_size(pool, ("a", "b"), "p")
    assert size["low_pct"] < size["increase_pct"] < size["high_pct"]
    assert 0.0 < size["increase_pct"] < 15.0 and size["runs"] == 12
    det = nights.detectable(pool, "a", "b")
    # The shared drift makes the pooled spread large; pairing by round removes it.
    assert det["mde_paired_pct"] < det["mde_pct"] / 3
    parts = nights.noise_parts(
        {"lan": pool["a"], "emu": pool_of({"e": 1.0}, sd=0.3, seed=5)["e"]}, ("lan",), "emu"
    )
    assert parts["emulated_log_sd"] > parts["lan_log_sd"] and parts["emulator_log_sd"] > 0.2
    assert nights.runs_needed(0.1, 5.0) > nights.runs_needed(0.02, 5.0) >= 2
    assert nights.runs_needed(None, 5.0) is None


def test_the_analysis_turns_measured_runs_into_the_records_figures_and_targets():
    rng = np.random.default_rng(6)
    records: dict[str, list[dict[str, object]]] = {}
    for c in sensitivity.CONDITIONS:
        recs = []
        for k in range(1, 13):
            noise = math.exp(rng.normal(0.0, 0.005))
            factor = 1 + c.plant_pct / 100
            recs.append(
                {"run_id": f"r{k}", "ok": True, "interference": k == 12 and c.name == "lan-a",
                 "rtt_net_p50_us": 60.0 * factor * noise, "server_cpu_cores": 0.1 * noise,
                 "server_cpu_us_per_msg": 8.0 * noise,
                 "server_instr_per_msg": 2700.0 * factor * noise}
            )  # fmt: skip
        records[c.name] = recs
    doc = sensitivity.analyse(records, n_nights=10, seed=1)
    by = {d["comparison"]: d for d in doc["nights"]}
    assert by["cpu+10%"]["confirmed_share"] == 1.0 and by["cpu+5%"]["confirmed_share"] == 1.0
    assert doc["false_alarms"]["confirmed"] == 0 and doc["false_alarms"]["cell_nights"] > 0
    # The run measured beside a busy neighbour is left out of the pool, and counted.
    assert by["A/A rtt_net_p50_us lan-b vs lan-a"]["pool_rounds"] == 11
    assert doc["runs_interfered"]["lan-a"] == 1
    assert doc["planted_sizes"]["cpu+5%"]["increase_pct"] == pytest.approx(5.0, abs=1.0)
    targets = {t["metric"]: t["pass"] for t in doc["targets"]}
    assert targets["planted_cpu10_confirmed_share"] and targets["mde_cpu_per_msg_pct"]


def test_the_plants_sizes_follow_the_calibration():
    plants = sensitivity.Plants(2700.0, 4.5, 120.0)
    assert plants.iterations(5.0) == 30 and plants.delay_us(10.0) == 12.0
    cell = sensitivity.cell_of(sensitivity.Condition("cg-cpu5", "callgrind", 5.0), "r1", plants)
    assert cell["extra_server_flags"] == ["-plant-iterations-per-msg", "30"]
    assert cell["server_profiler"] == "callgrind" and cell["players"] == 20
    # One seed for every run of a kind (the nightly's rounds); a seed per run for *-seeds.
    same = sensitivity.cell_of(sensitivity.Condition("cg-a", "callgrind"), "r2", plants)
    assert same["seed"] == cell["seed"]
    own = [sensitivity.cell_of(sensitivity.Condition("cg-seeds", "callgrind"), r, plants)["seed"]
           for r in ("r1", "r2")]  # fmt: skip
    assert own[0] != own[1] and cell["seed"] not in own
    emu = sensitivity.cell_of(sensitivity.Condition("emu-rtt10", "emulated", 10.0), "r1", plants)
    profile = emu["network_profile"]
    # The plant adds to the base delay every emulated condition has.
    assert profile["force_emulator"] and profile["up"] == {"delay_ms": 0.212}
    base = sensitivity.cell_of(sensitivity.Condition("emu-0", "emulated"), "r1", plants)
    assert base["network_profile"]["up"] == {"delay_ms": 0.2}


def test_conditions_measured_again_replace_their_cells_and_the_record_says_when() -> None:
    previous = {
        "schema": 1, "benchmark": "bench-sensitivity", "provenance": {"git": {}},
        "config": {"cells": {"lan-a": {"x": 1}, "emu-0": {"delay": "old"}}},
        "calibration": {"delay_us": {"5": 5.8}}, "runs": {}, "raw": "old-raw", "complete": True,
    }  # fmt: skip
    body = {
        "config": {"cells": {"emu-0": {"delay": "new"}}},
        "calibration": {"delay_us": {"5": 16.6}},
    }
    merged = sensitivity.merged_record(previous, body, ["emu-0"])
    assert merged["config"]["cells"] == {"lan-a": {"x": 1}, "emu-0": {"delay": "new"}}
    (again,) = merged["remeasured"]
    assert again["conditions"] == ["emu-0"] and again["replaced_raw"] == "old-raw"
    assert again["calibration"]["delay_us"] == {"5": 16.6} and merged["complete"] is False
    assert merged["calibration"] == {"delay_us": {"5": 5.8}}  # the other conditions' sizes
    assert "provenance" not in merged and "schema" not in merged
