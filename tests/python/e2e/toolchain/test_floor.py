"""The machine's floor (workflow/bench/floor): udp_floor.c built with the system's compiler and
run small, and a bench cell's figures as ratios to it."""

from __future__ import annotations

import pytest

from workflow.bench import floor
from workflow.bench.prototypes import _against


def test_the_floor_is_measured_and_its_players_follow_from_its_cpu() -> None:
    got = floor.measure(pairs=10, rounds=50, count=500, rate_hz=60.0)
    cpu = got["cpu_us_per_round_trip"]
    assert 0.5 < cpu < 1000, got  # four system calls on loopback: microseconds
    # A client's share is half the round trip (its send and its receive).
    assert got["players_per_client_core"] == pytest.approx(1e6 / (cpu / 2 * 60), rel=1e-3)
    assert 0 < got["pingpong_rtt_p50_us"] <= got["pingpong_rtt_p99_us"] < 100_000, got
    # The two-process floor: the sender's own CPU per round trip, at least its two calls.
    sender = got["pingpong_sender_cpu_us_per_round_trip"]
    assert 0.2 < sender < got["pingpong_rtt_p99_us"] * 10, got
    two_process = got["players_per_client_core_two_process"]
    assert two_process == pytest.approx(1e6 / (sender * 60), rel=1e-3)


def test_bad_arguments_are_refused_by_the_floor_program() -> None:
    with pytest.raises(floor.FloorError, match="usage: udp_floor"):
        floor.measure(pairs=0, rounds=1, count=500)


def test_a_cells_figures_become_ratios_to_the_floor() -> None:
    floors = [
        {"cpu_us_per_round_trip": 7.0, "players_per_client_core": 4800.0,
         "pingpong_rtt_p50_us": 13.0, "pingpong_rtt_p99_us": 30.0,
         "pingpong_sender_cpu_us_per_round_trip": 18.0,
         "players_per_client_core_two_process": 900.0},
        {"cpu_us_per_round_trip": 7.2, "players_per_client_core": 4600.0,
         "pingpong_rtt_p50_us": 15.0, "pingpong_rtt_p99_us": 32.0,
         "pingpong_sender_cpu_us_per_round_trip": 16.0,
         "players_per_client_core_two_process": 1100.0},
    ]  # fmt: skip
    rec = _against({"players_per_client_core": 1175.0, "rtt_p50_us": 70.0}, floors)
    assert rec["players_per_client_core_of_floor"] == 0.25  # of the median, 4,700
    assert rec["rtt_p50_over_floor"] == 5.0  # of the median, 14 µs
    assert rec["players_per_client_core_of_two_process_floor"] == 1.175  # of the median, 1,000
    assert (
        _against({"players_per_client_core": None, "rtt_p50_us": None}, floors)[
            "rtt_p50_over_floor"
        ]
        is None
    )
