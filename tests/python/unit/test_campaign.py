"""Campaign files: validation errors that name the key, the expansion into runs, the seeded order,
and that every shipped campaign plans."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from workflow.campaign import expand as campaigns

from support.paths import FAKE_MANIFEST


def write(tmp_path: Path, doc: dict, name: str = "t") -> Path:
    doc = {"name": name, **doc}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def base(**over: object) -> dict:
    doc: dict = {
        "description": "test",
        "seed": 7,
        "repetitions": 2,
        "defaults": {"duration_s": 3},
        "matrix": [
            {
                "name": "b",
                "prototypes": [{"name": "reference", "transports": ["tcp", "udp"]}],
                "players": [10, 20],
                "workloads": [
                    {"name": "idle"},
                    {"name": "stream", "params": {"rate": [10, 60]}},
                ],
            }
        ],
    }
    doc.update(over)
    return doc


def test_expansion_counts_cells_runs_and_param_axes(tmp_path: Path) -> None:
    plan = campaigns.plan(write(tmp_path, base()))
    # 2 transports x 2 player counts x (idle + stream at 2 rates) = 12 cells, 2 runs each
    assert len(plan.cell_ids) == 12
    assert len(plan.runs) == 24
    rates = {r.cell["params"].get("rate") for r in plan.runs if r.cell["workload"] == "stream"}
    assert rates == {"10", "60"}
    assert {r.run_id for r in plan.runs} == {"r1", "r2"}
    assert all(r.cell["campaign"] == "t" and r.cell["block"] == "b" for r in plan.runs)


def test_order_is_seeded_recorded_and_not_sorted(tmp_path: Path) -> None:
    a = campaigns.plan(write(tmp_path, base()))
    b = campaigns.plan(write(tmp_path, base()))
    c = campaigns.plan(write(tmp_path, base(seed=8)))
    keys = [r.key for r in a.runs]
    assert keys == [r.key for r in b.runs]  # same seed, same order
    assert keys != [r.key for r in c.runs]  # another seed, another order
    assert keys != sorted(keys)
    assert [r.cell["run_order"] for r in a.runs] == list(range(len(a.runs)))
    # every run has its own seed, derived from the campaign's
    assert len({r.cell["seed"] for r in a.runs}) == len(a.runs)
    assert {r.cell["seed"] for r in a.runs} != {r.cell["seed"] for r in c.runs}


def test_cell_ids_cover_every_measured_key(tmp_path: Path) -> None:
    a = campaigns.plan(write(tmp_path, base()))
    b = campaigns.plan(write(tmp_path, base(defaults={"duration_s": 3, "tick_rate_hz": 30})))
    # tick_rate_hz is not in the readable part of the id, but the content hash differs
    assert not set(a.cell_ids) & set(b.cell_ids)
    # repetitions share their cell id; the seed is not part of it
    c = campaigns.plan(write(tmp_path, base(seed=99)))
    assert a.cell_ids == c.cell_ids


def test_exclude_removes_matching_cells(tmp_path: Path) -> None:
    doc = base(exclude=[{"transport": "udp", "players": 20}, {"params.rate": 60}])
    plan = campaigns.plan(write(tmp_path, doc))
    facts = {
        (r.cell["transport"], r.cell["players"], r.cell["params"].get("rate")) for r in plan.runs
    }
    assert ("udp", 20, None) not in facts
    assert all(rate != "60" for _, _, rate in facts)
    assert ("udp", 10, None) in facts


def test_overrides_shorten_and_change_ids(tmp_path: Path) -> None:
    path = write(tmp_path, base())
    full = campaigns.plan(path)
    short = campaigns.plan(path, repetitions=1, duration_s=1)
    assert len(short.runs) == 12
    assert all(r.cell["duration_s"] == 1.0 for r in short.runs)
    assert not set(full.cell_ids) & set(short.cell_ids)


def test_unavailable_prototype_is_reported_not_dropped_silently(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["prototypes"].append({"name": "unity/mirror", "transports": ["kcp"]})
    plan = campaigns.plan(write(tmp_path, doc))
    assert len(plan.runs) == 24
    [gone] = plan.unavailable
    assert gone.prototype == "unity/mirror"
    assert gone.cells == 6 and gone.runs == 12
    assert "prototypes/unity/mirror/prototype.yaml" in gone.reason


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"repetitons": 3}, "key repetitons: unknown key; expected one of budget_min, defaults,"),
        ({"seed": -1}, "key seed: expected an integer >= 0, found -1 (an integer)"),
        ({"name": "other"}, "key name: 'other' must equal the file name 't'"),
    ],
)
def test_top_level_errors_name_the_key(tmp_path: Path, change: dict, expected: str) -> None:
    doc = base()
    doc.update(change)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"name": "t", **doc}))
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(path)
    assert expected in str(err.value)
    assert "t.yaml" in str(err.value)


def test_unknown_workload_lists_allowed_values(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["workloads"] = [{"name": "dance"}]
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, doc))
    text = str(err.value)
    assert (
        "key matrix.0.workloads.0.name: expected one of idle, active, wander, world, envmod, "
        'rpc-toggle, stream, pingpong, found "dance" (a string)'
    ) in text


def test_unknown_transport_names_the_manifests_transports(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["prototypes"][0]["transports"] = ["tcp", "carrier-pigeon"]
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, doc))
    text = str(err.value)
    assert "prototypes.0.transports.1" in text and "'carrier-pigeon'" in text
    assert "tcp, udp, kcp, enet, quic, ws, webrtc" in text


def test_unknown_transport_option_and_profile_and_exclude_key(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["prototypes"][0]["transports"] = [{"name": "quic", "options": {"x": "1"}}]
    with pytest.raises(campaigns.CampaignError, match=r"options\.x: not an option of quic"):
        campaigns.plan(write(tmp_path, doc))
    doc = base()
    doc["matrix"][0]["network_profiles"] = ["lan", "moon"]
    with pytest.raises(campaigns.CampaignError, match=r"profiles\.1: unknown profile 'moon'"):
        campaigns.plan(write(tmp_path, doc))
    with pytest.raises(campaigns.CampaignError, match=r"exclude\.0\.colour: unknown key"):
        campaigns.plan(write(tmp_path, base(exclude=[{"colour": "red"}])))


def test_matrix_keys_cannot_be_set_in_defaults(tmp_path: Path) -> None:
    with pytest.raises(campaigns.CampaignError, match=r"defaults: players are set by the matrix"):
        campaigns.plan(write(tmp_path, base(defaults={"duration_s": 3, "players": 5})))


@pytest.mark.parametrize(
    ("defaults", "expected"),
    [
        ({"duration_s": 3, "tick_rate_hz": -5}, "key defaults.tick_rate_hz: expected a number > 0"),
        (
            {"duration_s": "ten"},
            'key defaults.duration_s: expected a number > 0 and <= 86400, found "ten"',
        ),
        ({"duration_s": "10"}, 'found "10" (a string) (write it without quotes'),
        ({"duration_s": 3, "colour": 1}, "key defaults.colour: unknown key"),
    ],
)
def test_bad_default_is_named_where_it_was_written(
    tmp_path: Path, defaults: dict, expected: str
) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, base(defaults=defaults)))
    assert expected in str(err.value) and "matrix.0" not in str(err.value)


def test_bad_block_cell_key_is_named_in_its_block(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["cell"] = {"stop_grace_s": "soon"}
    with pytest.raises(
        campaigns.CampaignError, match=r"key matrix\.0\.cell\.stop_grace_s: expected"
    ):
        campaigns.plan(write(tmp_path, doc))


def test_unknown_campaign_name_lists_the_shipped_ones() -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan("nope")
    assert "quick" in str(err.value) and "workflow/campaigns/nope.yaml" in str(err.value)


def test_budget_is_checked(tmp_path: Path) -> None:
    plan = campaigns.plan(write(tmp_path, base(budget_min=0.5)))
    problem = plan.budget_problem()
    assert problem is not None and "budget_min" in problem and "over_budget=ok" in problem
    assert campaigns.plan(write(tmp_path, base(budget_min=60))).budget_problem() is None


def test_out_of_tree_manifest(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["prototypes"] = [
        {"name": "fake", "manifest": str(FAKE_MANIFEST), "transports": ["tcp"]}
    ]
    plan = campaigns.plan(write(tmp_path, doc))
    assert {(campaigns.REPO / r.cell["prototype"]).resolve() for r in plan.runs} == {
        FAKE_MANIFEST.resolve()
    }


@pytest.mark.parametrize("name", campaigns.available_campaigns())
def test_every_shipped_campaign_plans(name: str) -> None:
    plan = campaigns.plan(name)
    assert plan.runs, f"{name} has no runnable run"
    assert plan.budget_problem() is None, plan.budget_problem()


@pytest.mark.perf
def test_every_shipped_campaign_plans_within_10_s() -> None:
    for name in campaigns.available_campaigns():
        t0 = time.monotonic()
        campaigns.plan(name)
        took_s = time.monotonic() - t0
        assert took_s < 10, f"{name}: planning took {took_s:.1f} s"


def test_quick_matches_its_promise() -> None:
    plan = campaigns.plan("quick")
    transports = {r.cell["transport"] for r in plan.runs}
    players = {r.cell["players"] for r in plan.runs}
    reps = {r.run_id for r in plan.runs}
    # At least 6 runs per cell: the fewest for an order-statistic 95 % interval of the median
    # and for an exact Mann-Whitney p that can survive Benjamini-Hochberg.
    assert len(transports) >= 3 and len(players) >= 2 and len(reps) >= 6
    assert plan.budget_min is not None and plan.budget_min <= 10
    assert plan.estimate_s() <= 10 * 60


def test_nodes_per_run() -> None:
    assert campaigns.nodes_for(1, 500) == 2
    assert campaigns.nodes_for(500, 500) == 2
    assert campaigns.nodes_for(501, 500) == 3
    assert campaigns.nodes_for(200, 50) == 5


def test_cli_plan_prints_the_plan_and_names_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workflow.cli import main as cli_main

    assert cli_main(["campaign", "plan", str(write(tmp_path, base()))]) == 0
    assert "campaign t: 24 runs of 12 cells, seed 7" in capsys.readouterr().out
    doc = base()
    doc["matrix"][0]["players"] = [0]
    assert cli_main(["campaign", "plan", str(write(tmp_path, doc))]) == 2
    err = capsys.readouterr().err
    assert "netstick campaign:" in err and "matrix.0.players.0" in err


def test_typod_prototype_name_is_an_error_listing_the_known_ones(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["prototypes"].append({"name": "refrence", "transports": ["tcp"]})
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, doc))
    text = str(err.value)
    assert "key prototypes.1.name: 'refrence' has no manifest" in text
    assert "reference" in text and "unity/mirror" in text


def test_prototype_filter_naming_no_prototype_of_the_campaign_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, base()), only_prototypes=["refrence"])
    assert "'refrence' not in this campaign; expected names from reference" in str(err.value)


def test_undeclared_extra_flag_in_defaults_is_refused_when_planning(tmp_path: Path) -> None:
    doc = base()
    doc["defaults"]["extra_client_flags"] = ["-no-such-flag", "1"]
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, doc))
    text = str(err.value)
    assert "matrix.0 (b): key defaults.extra_client_flags: '-no-such-flag'" in text
    assert "optional_flags: -probe-hz" in text


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ({"name": "idle", "params": {"blocks": 3}},
         "key params.blocks: not a parameter of workload idle; it takes none"),
        ({"name": "stream", "params": {"channel": "tcp"}},
         'key params.channel: expected one of reliable, unreliable, found "tcp"'),
        ({"name": "stream", "params": {"size": -1}},
         "key params.size: expected an integer >= 18 and <= 1048576, found -1"),
        ({"name": "world", "params": {"size": "S", "objects": 10}},
         "key params: give objects or size for workload world, not both"),
        ({"name": "active", "params": {"blocks": [1, "x"]}},
         'key params.blocks: expected an integer >= 1 and <= 1000000, found "x"'),
    ],
)  # fmt: skip
def test_workload_parameters_and_values_are_checked_against_the_contract(
    tmp_path: Path, workload: dict, expected: str
) -> None:
    doc = base()
    doc["matrix"][0]["workloads"] = [workload]
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, doc))
    text = str(err.value)
    assert expected in text and "t.yaml: matrix.0 (b)" in text


def test_parameters_as_text_are_read_as_the_prototype_reads_them(tmp_path: Path) -> None:
    doc = base()
    doc["matrix"][0]["workloads"] = [
        {"name": "stream", "params": {"size": "400", "rate": "60", "channel": "unreliable"}},
        {"name": "active", "params": {"continuous": "true"}},
    ]
    assert len(campaigns.plan(write(tmp_path, doc)).runs) == 2 * 2 * 2 * 2


def _manifest_copy(tmp_path: Path, executable: str, build: str | None = None) -> Path:
    text = FAKE_MANIFEST.read_text().replace(
        "executable: fake_prototype.py", f"executable: {executable}"
    )
    if build is not None:
        text += f"build:\n  command: [sh, -c, {build!r}]\n"
    path = tmp_path / "proto" / "prototype.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def _fake_campaign(tmp_path: Path, manifest: Path) -> dict:
    doc = base()
    doc["matrix"][0]["prototypes"] = [
        {"name": "fake", "manifest": str(manifest), "transports": ["tcp"]}
    ]
    doc["matrix"][0]["workloads"] = [{"name": "idle"}]
    return doc


def test_missing_executable_without_a_build_command_is_refused_when_planning(
    tmp_path: Path,
) -> None:
    manifest = _manifest_copy(tmp_path, "bin/absent")
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(write(tmp_path, _fake_campaign(tmp_path, manifest)))
    text = str(err.value)
    assert "key prototypes.0:" in text and "prototype.yaml: key executable:" in text
    assert "bin/absent does not exist and the manifest has no build.command" in text


def test_missing_executable_with_a_build_command_plans_and_is_built_by_the_workflow(
    tmp_path: Path,
) -> None:
    manifest = _manifest_copy(tmp_path, "bin/fake.py", build="mkdir -p bin && touch bin/fake.py")
    plan = campaigns.plan(write(tmp_path, _fake_campaign(tmp_path, manifest)))
    assert len(plan.runs) == 4
    (man,) = campaigns.manifests_of(plan).values()
    assert man.build_command == ("sh", "-c", "mkdir -p bin && touch bin/fake.py")


def test_executable_without_launcher_must_be_executable(tmp_path: Path) -> None:
    manifest = _manifest_copy(tmp_path, "proto.bin")
    manifest.write_text(manifest.read_text().replace('launcher: ["{python}"]', "launcher: []"))
    (manifest.parent / "proto.bin").write_text("#!/bin/sh\n")
    with pytest.raises(campaigns.CampaignError, match=r"proto.bin is not executable \(chmod"):
        campaigns.plan(write(tmp_path, _fake_campaign(tmp_path, manifest)))
