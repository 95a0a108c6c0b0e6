"""Transports as their users get them, tunings as named variants: a campaign names enet+merged-acks
and gets a cell of its own with the variant's options on the command line; a tuning cannot run
unnamed; the manifest's variants and settings are validated; the statistics never pool a variant
(or another set of transport options) with the stock transport; the process's recorded settings
are checked against the manifest's."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from prototypes.contract import argv
from prototypes.contract import manifest as manifests
from prototypes.contract.checklogs.meta import report_transport_settings
from report import transports as report_transports
from stats import comparisons
from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.campaign import order
from workflow.campaign.facts import transports as facts_transports

from support.paths import REFERENCE_MANIFEST


def _campaign(tmp_path: Path, transports: list, **block: object) -> Path:
    doc = {
        "name": "v",
        "description": "variants",
        "seed": 3,
        "repetitions": 2,
        "order": "rounds",
        "defaults": {"duration_s": 3},
        "matrix": [
            {
                "name": "b",
                "prototypes": [{"name": "reference", "transports": transports}],
                "players": [10],
                "workloads": [{"name": "idle"}],
                **block,
            }
        ],
    }
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_variant_is_a_cell_of_its_own_with_its_options_on_the_command_line(
    tmp_path: Path,
) -> None:
    plan = campaigns.plan(_campaign(tmp_path, ["enet", "enet+merged-acks"]))
    cells = {r.cell["cell_id"]: r.cell for r in plan.runs}
    assert len(cells) == 2
    stock = next(c for c in cells.values() if "variant" not in c)
    tuned = next(c for c in cells.values() if c.get("variant") == "merged-acks")
    # The stock cell is what it was before variants existed: no new keys, the same id.
    assert "variant_options" not in stock and stock["cell_id"].startswith("reference-enet-p10-")
    assert tuned["cell_id"].startswith("reference-enet+merged-acks-p10-idle-lan-")
    assert tuned["transport"] == "enet" and tuned["variant_options"] == {"merged_acks": "true"}
    assert tuned["transport_options"] == {}
    assert layout.transport_label(tuned) == "enet+merged-acks"
    args = argv.param_args(tuned)
    assert args[-2:] == ["-param", "t.merged_acks=true"] and "t.merged_acks=true" not in (
        argv.param_args(stock)
    )
    # Rounds: stock and variant are one comparison's context, measured beside each other with
    # one replayed seed.
    assert order.context(stock) == order.context(tuned)
    assert {r.cell["seed"] for r in plan.runs} == {plan.runs[0].cell["seed"]}


def test_a_tuning_cannot_run_unnamed_nor_be_overridden(tmp_path: Path) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(_campaign(tmp_path, [{"name": "enet", "options": {"merged_acks": "true"}}]))
    text = str(err.value)
    assert "prototypes.0.transports.0.options.merged_acks: not an option of enet" in text
    assert "name the variant enet+merged-acks or enet+tuned" in text
    with pytest.raises(campaigns.CampaignError, match=r"set by the variant enet\+tuned"):
        campaigns.plan(
            _campaign(tmp_path, [{"name": "enet+tuned", "options": {"seed_rtt": "false"}}])
        )


def test_an_unknown_variant_names_the_declared_ones(tmp_path: Path) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(_campaign(tmp_path, ["tcp", "enet+fast"]))
    text = str(err.value)
    assert "prototypes.0.transports.1: enet+fast names no variant of enet" in text
    assert "enet+merged-acks, enet+fast-connect, enet+tuned" in text
    with pytest.raises(campaigns.CampaignError, match=r"tcp declares none|names no variant"):
        campaigns.plan(_campaign(tmp_path, ["tcp+turbo"]))


def _manifest_with(tmp_path: Path, **enet: object) -> Path:
    doc = yaml.safe_load(REFERENCE_MANIFEST.read_text())
    for t in doc["transports"]:
        if t["name"] == "enet":
            t.update(enet)
    path = tmp_path / "prototype.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp_path / "bin").mkdir(exist_ok=True)
    return path


def test_manifest_variants_and_settings_are_validated(tmp_path: Path) -> None:
    twice = [{"name": "x", "description": "d", "options": {"a": "1"}}] * 2
    bad_option = {"sockbuf": {"value": "1", "library_default": "2", "description": "d",
                              "option": "nope"}}  # fmt: skip
    with pytest.raises(manifests.ManifestError) as err:
        manifests.load(_manifest_with(tmp_path, variants=twice, settings=bad_option))
    text = str(err.value)
    assert "key transports.3.variants.1.name: 'x' repeats an earlier variant" in text
    assert "key transports.3.settings.sockbuf.option: 'nope' is neither an option" in text
    with pytest.raises(manifests.ManifestError, match=r"variants\.0.*options"):
        manifests.load(_manifest_with(tmp_path, variants=[{"name": "y", "description": "d"}]))


def test_the_statistics_never_pool_a_variant_or_other_options_with_stock() -> None:
    runs = pl.DataFrame(
        {
            "transport": ["enet", "enet+merged-acks", "webrtc", "webrtc"],
            "transport_options": ["{}", "{}", "{}", json.dumps({"unreliable": "reliable"})],
            "library_version": ["pinned", "pinned", "pinned", "v4.2.26"],
        }
    )
    labels = comparisons.with_variant(runs)["_variant"].to_list()
    assert labels == [
        "enet",
        "enet+merged-acks",
        "webrtc",
        "webrtc t.unreliable=reliable@v4.2.26",
    ]


def _meta(tmp_path: Path, settings: object, options: dict | None = None) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    doc = {"transport": "kcp", "transport_options": options or {}}
    if settings is not None:
        doc["transport_settings"] = settings
    (logs / "server.meta.json").write_text(json.dumps(doc))
    return logs


def test_recorded_settings_are_checked_against_the_manifest(tmp_path: Path) -> None:
    man = manifests.load(REFERENCE_MANIFEST)
    declared = {k: s.value for k, s in man.transport("kcp").settings.items()}
    assert declared, "the reference declares kcp's settings"

    def problems(settings: object, options: dict | None = None) -> list[str]:
        found: list[str] = []
        logs = _meta(tmp_path, settings, options)
        report_transport_settings(logs, man, lambda f, line, msg: found.append(msg))
        return found

    assert problems(declared) == []
    name, setting = next(
        (k, s) for k, s in man.transport("kcp").settings.items() if s.option is not None
    )
    changed = {**declared, name: setting.value + "0"}
    assert problems(changed, {setting.option: setting.value + "0"}) == []
    [msg] = problems(changed)
    assert f"transport_settings says {name}" in msg and "no option that changes it" in msg
    missing = {k: v for k, v in declared.items() if k != name}
    assert any(f"lacks {name}" in m for m in problems(missing))
    assert any("holds bogus" in m for m in problems({**declared, "bogus": "1"}))
    assert any("expected an object" in m for m in problems(None))


def test_the_report_names_variant_options_and_library_defaults() -> None:
    item, value = report_transports.row(
        {
            "transport": "enet+merged-acks",
            "variant": "merged-acks",
            "variant_description": "acknowledgements ride with answers",
            "variant_options": {"merged_acks": "true"},
            "campaign_options": ["{}", json.dumps({"timeout_ms": "5000"})],
            "runs": 6,
            "runs_without_settings": 0,
            "settings": [
                {"name": "sockbuf", "values": ["4194304"], "library_default": "262144"},
                {"name": "timeout_ms", "values": ["3000", "5000"], "library_default": "5000"},
            ],
        }
    )
    assert item == "transport enet+merged-acks"
    assert value.startswith(
        "6 runs; variant merged-acks: acknowledgements ride with answers (t.merged_acks=true)"
    )
    assert "campaign options t.timeout_ms=5000" in value
    assert "sockbuf 4194304 (library default 262144), timeout_ms 3000 / 5000" in value


def _ran(cell: dict, settings: dict | None) -> layout.RawRun:
    processes = {"server": {"prototype": "reference", "transport_settings": settings}}
    return layout.RawRun(
        campaign="v",
        cell={"run_id": "r1", "cell_id": "c", **cell},
        block="b",
        record={"status": "ok"},
        run_dir=Path("."),
        failed=(),
        meta={"versions": {"prototypes": [{"processes": processes}]}},
        host="h",
    )


def test_facts_list_each_transport_as_measured_with_its_recorded_settings() -> None:
    proto = "prototypes/reference/prototype.yaml"
    runs = [
        _ran({"prototype": proto, "transport": "enet"}, {"sockbuf": "4194304"}),
        _ran({"prototype": proto, "transport": "enet"}, {"sockbuf": "0"}),
        _ran(
            {"prototype": proto, "transport": "enet", "variant": "merged-acks",
             "variant_options": {"merged_acks": "true"}},
            None,
        ),
    ]  # fmt: skip
    found = facts_transports.transports(runs, REFERENCE_MANIFEST.parents[2], str)[proto]
    stock, tuned = found
    assert (stock["transport"], stock["runs"], stock["variant"]) == ("enet", 2, None)
    sockbuf = next(s for s in stock["settings"] if s["name"] == "sockbuf")
    assert sockbuf["values"] == ["4194304", "0"] and sockbuf["library_default"] == "262144"
    # Declared but not recorded by these runs: listed with no values.
    assert next(s for s in stock["settings"] if s["name"] == "max_peers")["values"] == []
    assert tuned["transport"] == "enet+merged-acks" and tuned["runs_without_settings"] == 1
    assert tuned["variant_description"].startswith("a service pass's acknowledgements")
    assert tuned["variant_options"] == {"merged_acks": "true"}
