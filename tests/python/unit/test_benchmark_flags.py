"""Benchmark flags (a manifest's benchmark_flags: planted regressions): parsed from the manifest,
refused in every ordinary campaign with a message naming the file, the key and why, accepted in
a plan made for a benchmark and when the harness builds the server's command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from prototypes.contract import argv
from prototypes.contract import manifest as mf
from workflow.campaign import benchmark
from workflow.campaign import expand as campaigns
from workflow.campaign.confirm import confirm_campaign
from workflow.cli.main import main

from support.manifest_variants import Doc, load_variant
from support.paths import FAKE_MANIFEST, REFERENCE_MANIFEST

FLAG = "plant-cpu-ns-per-msg"
PLANTED = [f"-{FLAG}", "500"]


def campaign(root: Path, name: str = "planted", **cell: object) -> Path:
    """root/<name>.yaml: the reference over TCP, 2 players idle, 1 run; cell: its defaults."""
    doc = {
        "name": name,
        "description": "a planted regression",
        "seed": 3,
        "repetitions": 1,
        "defaults": {"duration_s": 2, **cell},
        "matrix": [
            {
                "name": "b",
                "prototypes": [{"name": "reference", "transports": ["tcp"]}],
                "players": [2],
                "workloads": [{"name": "idle"}],
            }
        ],
    }
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_reference_declares_its_plant_as_a_benchmark_flag() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    assert FLAG in man.benchmark_flags and "CPU work" in man.benchmark_flags[FLAG]
    # Not passable any other way: neither an optional nor a prototype flag.
    assert FLAG not in man.optional_flags and FLAG not in man.prototype_flags
    assert mf.load(FAKE_MANIFEST).benchmark_flags == {}  # a manifest without the section


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.update(benchmark_flags={"Plant": "x"}), "key benchmark_flags"),
        (lambda d: d.update(benchmark_flags={"plant": ""}), "key benchmark_flags.plant"),
        (
            lambda d: d.update(
                benchmark_flags={"probe-hz": "planted probes"}, optional_flags=["probe-hz"]
            ),
            "key benchmark_flags.probe-hz: also an optional or prototype flag",
        ),
        (
            lambda d: d.update(benchmark_flags={"slow": "s"}, prototype_flags={"slow": "s"}),
            "key benchmark_flags.slow: also an optional or prototype flag",
        ),
    ],
)
def test_a_bad_benchmark_flags_section_is_refused_by_key(
    tmp_path: Path, change: Callable[[Doc], None], named: str
) -> None:
    with pytest.raises(mf.ManifestError) as err:
        load_variant(tmp_path, change)
    assert named in str(err.value) and str(tmp_path / "prototype.yaml") in str(err.value)


def _cell(**over: object) -> dict[str, object]:
    return {"transport": "tcp", "workload": "idle", **over}


def test_check_cell_refuses_a_benchmark_flag_unless_planned_for_a_benchmark() -> None:
    man = mf.load(REFERENCE_MANIFEST)
    with pytest.raises(ValueError) as err:
        argv.check_cell(man, _cell(extra_server_flags=PLANTED))
    text = str(err.value)
    assert text.startswith("extra_server_flags: '-plant-cpu-ns-per-msg' is benchmark-only")
    assert "plants a regression" in text and "netstick bench" in text
    argv.check_cell(man, _cell(extra_server_flags=[f"-{FLAG}=500"]), benchmark=True)
    # The clients never plant: refused there even for a benchmark.
    with pytest.raises(ValueError, match="extra_client_flags: '-plant-cpu-ns-per-msg' is not"):
        argv.check_cell(man, _cell(extra_client_flags=PLANTED), benchmark=True)
    # The plant in iterations (for callgrind) is benchmark-only alike.
    iterations = ["-plant-iterations-per-msg", "30"]
    with pytest.raises(ValueError, match="'-plant-iterations-per-msg' is benchmark-only"):
        argv.check_cell(man, _cell(extra_server_flags=iterations))
    argv.check_cell(man, _cell(extra_server_flags=iterations), benchmark=True)


def test_the_harness_builds_a_planted_servers_command() -> None:
    """At run time the plan has been checked: the server's argv carries the flag."""
    man = mf.load(REFERENCE_MANIFEST)
    cmd = argv.server_argv(
        man, _cell(extra_server_flags=PLANTED), host="127.0.0.1", port=7000, log_dir="/x"
    )
    assert cmd[-2:] == PLANTED


def test_an_ordinary_campaign_is_refused_naming_file_key_and_why(tmp_path: Path) -> None:
    path = campaign(tmp_path, extra_server_flags=PLANTED)
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(path)
    text = str(err.value)
    assert text.startswith(f"{path}: matrix.0 (b): key defaults.extra_server_flags: ")
    assert "'-plant-cpu-ns-per-msg' is benchmark-only: it plants a regression" in text
    assert "remove it from this campaign" in text


def test_a_plan_made_for_a_benchmark_carries_the_flag(tmp_path: Path) -> None:
    plan = campaigns.plan(campaign(tmp_path, extra_server_flags=PLANTED), benchmark=True)
    (run,) = plan.runs
    assert run.cell["extra_server_flags"] == PLANTED


def test_netstick_campaign_plan_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Even inside a bench's scratch directory: `campaign plan` is a user's command."""
    path = campaign(tmp_path, extra_server_flags=PLANTED)
    monkeypatch.setenv(benchmark.BENCH_SCRATCH_ENV, str(tmp_path))
    assert main(["campaign", "plan", str(path)]) == 2
    err = capsys.readouterr().err
    assert "key defaults.extra_server_flags" in err and "benchmark-only" in err


def test_only_a_campaign_inside_the_benchs_scratch_directory_is_planned_for_a_benchmark(
    tmp_path: Path,
) -> None:
    root = tmp_path / "scratch"
    inside, outside = campaign(root), campaign(tmp_path / "mine")
    env = benchmark.bench_env(root, base={})
    assert env == {benchmark.BENCH_SCRATCH_ENV: str(root.resolve())}
    assert benchmark.planned_for_benchmark(inside, root / "data", environ=env)
    assert not benchmark.planned_for_benchmark(inside, environ={})  # no bench started us
    assert not benchmark.planned_for_benchmark(outside, environ=env)  # a user's campaign
    assert not benchmark.planned_for_benchmark(inside, tmp_path / "data", environ=env)
    assert not benchmark.planned_for_benchmark(campaigns.campaign_path("quick"), environ=env)
    # A relative path climbing out of the scratch directory is outside it.
    assert not benchmark.planned_for_benchmark(root / ".." / "mine" / "x.yaml", environ=env)


def test_the_confirming_rerun_of_a_benchs_night_keeps_its_plant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bench's nightly confirms its suspects with a re-run campaign written beside its data,
    inside the scratch directory: planned for a benchmark too, the plant kept."""
    root = tmp_path / "scratch"
    path = campaign(root, extra_server_flags=PLANTED)
    night = campaigns.plan(path, benchmark=True)
    cells = sorted({r.cell["cell_id"] for r in night.runs})
    doc: Doc = {"campaign": "planted", "night_id": "n1", "cells": [
        {"cell": c, "suspected": True} for c in cells
    ]}  # fmt: skip
    with pytest.raises(campaigns.CampaignError, match="benchmark-only"):
        confirm_campaign(doc, path, root / "confirm")
    monkeypatch.setenv(benchmark.BENCH_SCRATCH_ENV, str(root))
    out = confirm_campaign(doc, path, root / "confirm")
    rerun = campaigns.plan(out, benchmark=True)
    assert {r.cell["cell_id"] for r in rerun.runs} == set(cells)
    assert all(r.cell["extra_server_flags"] == PLANTED for r in rerun.runs)
