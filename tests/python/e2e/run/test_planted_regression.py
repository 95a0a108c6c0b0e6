"""A planted regression, measured through the harness with the real reference server: the N
derived for 30 % more server CPU per message makes a planted server use roughly that much more
CPU per message than an unplanted one at the same load, and its meta.json says what was planted;
a plant in iterations adds instructions per message under callgrind."""

from __future__ import annotations

import json
from pathlib import Path

from workflow.bench import noise, plant, sensitivity

from support.marks import needs_reference_binary, needs_valgrind

TARGET_PCT = 30.0
DURATION_S = 4.0


@needs_reference_binary
def test_a_planted_server_does_the_planted_extra_cpu_per_message(tmp_path: Path) -> None:
    cal = plant.calibrate(TARGET_PCT, tmp_path / "calibration", runs=2, duration_s=DURATION_S)
    assert cal.baseline_cpu_us_per_msg > 0 and 0 < cal.received_share < 1
    # N per received message: the target share of the CPU per message, over the received share.
    assert cal.ns_per_msg == round(
        TARGET_PCT / 100 * cal.baseline_cpu_us_per_msg * 1e3 / cal.received_share, 1
    )
    res = plant.check(
        cal.ns_per_msg, tmp_path / "check", pairs=2, duration_s=DURATION_S, baseline=cal.runs
    )
    unplanted = sorted(m.cpu.cpu_us_per_msg for m in res.unplanted)
    planted = sorted(m.cpu.cpu_us_per_msg for m in res.planted)
    detail = f"unplanted {unplanted}, planted {planted} µs/msg, N {cal.ns_per_msg} ns"
    assert len(unplanted) == 4 and len(planted) == 2
    # Roughly the planted amount: CPU time is sampled in 10 ms ticks of ~0.4 s per window and
    # the machine is shared, hence a loose bound.
    assert 15 < res.increase_pct < 60, detail

    planted_meta = json.loads(
        (Path(res.planted[0].run_dir) / "logs" / "server.meta.json").read_text()
    )
    rec = planted_meta["plant"]
    assert rec["cpu_ns_per_msg"] == cal.ns_per_msg
    assert len(rec["calibration_trials_iterations_per_us"]) == 7
    assert 10 < rec["calibration_iterations_per_us"] < 10000
    want = cal.ns_per_msg * rec["calibration_iterations_per_us"] / 1e3
    assert abs(rec["iterations_per_msg"] - want) <= 0.5
    assert f"-{plant.PLANT_FLAG}" in planted_meta["args"]
    unplanted_meta = json.loads(
        (Path(res.unplanted[-1].run_dir) / "logs" / "server.meta.json").read_text()
    )
    assert unplanted_meta["plant"] == {"cpu_ns_per_msg": 0}


@needs_reference_binary
@needs_valgrind
def test_a_plant_in_iterations_adds_instructions_per_message_under_callgrind(
    tmp_path: Path,
) -> None:
    # The sensitivity bench's instructions cell, one seed, unplanted and with 200 iterations per
    # received message: callgrind counts the hash's instructions, whatever valgrind does to time.
    plants = sensitivity.Plants(2700.0, 5.0, 100.0)
    runs = {}
    for name, plant_pct in (("cg-a", 0.0), ("cg-cpu", 37.0)):  # 37 % -> 200 iterations
        c = sensitivity.Condition(name, "callgrind", plant_pct)
        cell = sensitivity.cell_of(c, "r1", plants)
        runs[name] = noise.run_once(cell, tmp_path / name)
        assert runs[name]["ok"], runs[name].get("error")
    assert plants.iterations(37.0) == 200
    base, planted = (runs[n]["server_instr_per_msg"] for n in ("cg-a", "cg-cpu"))
    # ~10-13 instructions per iteration, on the received share of the messages (about half at
    # 20 active players): 200 iterations add roughly 1000-1300 per message.
    assert 400 < planted - base < 3000, (base, planted)
    meta = json.loads((Path(runs["cg-cpu"]["run_dir"]) / "logs" / "server.meta.json").read_text())
    assert meta["plant"]["iterations_per_msg"] == 200 and meta["plant"]["cpu_ns_per_msg"] == 0
    assert "-plant-iterations-per-msg" in meta["args"]
