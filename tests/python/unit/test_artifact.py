"""facts.json and artifact.json: every value read or measured, the check-list complete, the
badges honest, the licence named."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from report import checklist
from workflow.campaign.facts import checkout
from workflow.cli.main import main as cli_main

from support.finished_campaign import COMMIT, FakeCampaign, collect, make_campaign
from support.paths import REPO

CTUNING = [
    "Algorithm",
    "Program",
    "Compilation",
    "Transformations",
    "Binary",
    "Model",
    "Data set",
    "Run-time environment",
    "Hardware",
    "Run-time state",
    "Execution",
    "Metrics",
    "Output",
    "Experiments",
    "How much disk space required (approximately)?",
    "How much time is needed to prepare workflow (approximately)?",
    "How much time is needed to complete experiments (approximately)?",
    "Publicly available?",
    "Code licenses (if publicly available)?",
    "Data licenses (if publicly available)?",
    "Workflow framework used?",
    "Archived (provide DOI)?",
]


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> FakeCampaign:
    return make_campaign(tmp_path_factory.mktemp("artifact"))


@pytest.fixture(scope="module")
def doc(fake: FakeCampaign) -> dict[str, Any]:
    return collect(fake.results, fake.raw)


def test_ctuning_checklist_has_every_item_in_order_with_a_value(doc: dict[str, Any]) -> None:
    items = doc["ctuning_checklist"]
    assert [i["item"] for i in items] == CTUNING
    for i in items:
        assert isinstance(i["value"], str) and i["value"].strip(), i["item"]
    by_item = {i["item"]: i["value"] for i in items}
    assert by_item["Transformations"] == "none"
    assert by_item["Model"] == "none"
    assert "make build" in by_item["Compilation"] and "1.26.8" in by_item["Compilation"]
    assert "Fake CPU" in by_item["Hardware"]
    assert "2 ok, 1 failed, 1 not run" in by_item["Experiments"]


def test_lock_file_hashes_are_those_of_the_real_files(doc: dict[str, Any]) -> None:
    locks = {entry["path"]: entry for entry in doc["lock_files"]}
    for name in (
        "requirements.txt",
        "requirements-nodeps.txt",
        "prototypes/reference/go.mod",
        "prototypes/reference/go.sum",
        "workflow/setup.sh",
    ):
        data = (REPO / name).read_bytes()
        assert locks[name]["sha256"] == hashlib.sha256(data).hexdigest(), name
        assert locks[name]["bytes"] == len(data), name
    # Every go.sum in the checkout is listed, not only the reference prototype's.
    assert {p.relative_to(REPO).as_posix() for p in REPO.glob("*/*/go.sum")} <= set(locks)
    assert "r-base-core" in doc["software"]["apt"]["names"]


def test_disk_is_the_sum_of_the_files_written(doc: dict[str, Any], fake: FakeCampaign) -> None:
    # Measured before facts.json itself is written.
    assert doc["disk"]["raw"]["bytes"] == fake.raw_bytes
    assert doc["disk"]["raw"]["files"] == fake.raw_files
    assert doc["disk"]["results"]["bytes"] == fake.results_bytes
    assert doc["disk"]["total_bytes"] == fake.raw_bytes + fake.results_bytes


def test_time_to_run_is_the_span_of_the_runs(doc: dict[str, Any], fake: FakeCampaign) -> None:
    first = min(s for s, _ in fake.spans)
    last = max(e for _, e in fake.spans)
    t = doc["time"]
    assert t["time_to_run_s"] == pytest.approx((last - first) / 1e9)
    assert t["first_start_unix_ns"] == first and t["last_end_unix_ns"] == last
    assert t["attempts_counted"] == 3  # two ok runs and the kept failed attempt
    assert t["measurement_windows_s"] == pytest.approx(fake.windows_s, abs=1e-3)
    assert t["overhead_s"] == pytest.approx(fake.overhead_s, abs=1e-3)
    assert t["start_time"].startswith("2023-11-14T22:13:20")


def test_experiments_hardware_and_software_come_from_the_files(doc: dict[str, Any]) -> None:
    exp = doc["experiments"]
    assert (exp["cells"], exp["runs_planned"]) == (2, 4)
    assert (exp["runs_ok"], exp["runs_failed"], exp["runs_not_run"]) == (2, 1, 1)
    assert exp["repetitions_per_cell"] == [2]
    assert exp["durations_s"] == [2.0]
    assert exp["seed"] == 4242
    assert exp["transports"] == ["kcp", "tcp"]
    runs_hw = doc["hardware"]["runs"]
    assert runs_hw["cpu_model"] == ["Fake CPU"] and runs_hw["hostnames"] == ["fakehost"]
    assert doc["hardware"]["collection_machine"]["cpu_count"] >= 1
    assert doc["software"]["go"]["version_in_runs"] == ["go1.26.8"]
    assert doc["software"]["go"]["modules"] == {"github.com/xtaci/kcp-go/v5": "v5.6.72"}
    assert doc["software"]["kernel"] == ["6.1.0-fake"]
    assert doc["software"]["python"]["packages"]["rocrate"] == "0.16.0"
    names = [m["name"] for m in doc["metrics"]["list"]]
    assert names[0] == "rtt_net_p50_us"
    assert "net" in doc["metrics"]["rtt_definition"]


def test_commands_name_the_campaign_and_the_recorded_commit(doc: dict[str, Any]) -> None:
    cmds = [c["command"] for c in doc["commands"]]
    assert f"git checkout {COMMIT}" in cmds
    assert "make run CAMPAIGN=fake" in cmds
    assert ".venv/bin/snakemake --config campaign=fake" in cmds
    assert ".venv/bin/snakemake --profile das6 --config campaign=fake" in cmds
    assert ".venv/bin/netstick report fake" in cmds
    # The runs' commit is not this checkout's HEAD: that is said, not hidden.
    assert doc["git"]["recorded_commits"] == [COMMIT]
    if doc["git"]["checkout"]:
        assert any("differ from HEAD" in w for w in doc["git"]["warnings"])


def test_missing_results_files_are_reported_not_fatal(doc: dict[str, Any], tmp_path: Path) -> None:
    files = doc["results"]["files"]
    assert files["runs.parquet"].startswith("not available")
    assert files["ingest.json"].startswith("not available")
    assert files["cells.csv"]["sha256"]  # present ones are hashed
    assert doc["results"]["findings"] == 2
    assert doc["results"]["ingest"].startswith("not available")
    # No results directory and no plan at all: still a document.
    empty = collect(tmp_path / "none", tmp_path / "raw-none")
    assert empty["disk"]["results"]["bytes"] is None
    assert empty["time"]["time_to_run_s"] is None
    assert empty["plan"].startswith("not available")
    assert [i["item"] for i in empty["ctuning_checklist"]] == CTUNING


def test_badges_are_honest(doc: dict[str, Any]) -> None:
    badges = {b["badge"]: b for b in doc["acm_badges"]}
    assert list(badges) == [
        "Artifacts Available",
        "Artifacts Evaluated – Functional",  # noqa: RUF001
        "Artifacts Evaluated – Reusable",  # noqa: RUF001
        "Results Reproduced",
    ]
    # This checkout's CITATION.cff has no DOI: not available, whatever else holds. Its licence
    # is there, and the badge says so.
    available = badges["Artifacts Available"]
    assert available["met"] is False
    assert "DOI" in available["missing"] and "licence" not in available["missing"]
    checks = {c["check"].split(":")[0]: c["met"] for c in available["checks"]}
    assert checks["licence"] is True
    assert [c["met"] for c in available["checks"] if "DOI" in c["check"]] == [False]
    # One run failed and one never ran: not complete.
    assert badges["Artifacts Evaluated – Functional"]["met"] is False  # noqa: RUF001
    assert "every planned run" in badges["Artifacts Evaluated – Functional"]["missing"]  # noqa: RUF001
    assert badges["Results Reproduced"]["met"] is False
    for b in badges.values():
        assert b["evidence"] and b["missing"]


def test_a_repo_that_is_no_checkout_with_a_doi_and_a_setup_record(tmp_path: Path) -> None:
    fake = make_campaign(tmp_path / "data")
    repo = tmp_path / "repo"
    (repo / ".venv").mkdir(parents=True)
    (repo / ".venv" / "netstick-setup.json").write_text(
        json.dumps({"steps": {"apt_s": 61.5, "venv_s": 40.0}, "finished_unix_s": 1700000000})
    )
    (repo / "CITATION.cff").write_text("cff-version: 1.2.0\ntitle: t\ndoi: 10.5281/zenodo.1\n")
    (repo / "LICENSE").write_text("MIT License\n\nCopyright (c) 2024 someone\n")
    doc = collect(fake.results, fake.raw, repo)
    assert doc["git"]["checkout"] is False and doc["git"]["commit"] is None
    assert all(e["sha256"] is None and "not available" in e["note"] for e in doc["lock_files"])
    setup_bytes = (repo / ".venv" / "netstick-setup.json").stat().st_size
    assert doc["disk"]["environment"][".venv"]["bytes"] == setup_bytes
    assert doc["disk"]["environment"][".tools"]["bytes"] is None  # absent, and said so
    prep = doc["time"]["time_to_prepare"]
    assert prep["steps_s"] == {"apt_s": 61.5, "venv_s": 40.0} and prep["total_s"] == 101.5
    badges = {b["badge"]: b for b in doc["acm_badges"]}
    assert badges["Artifacts Available"]["met"] is True
    assert doc["licences"]["code"]["spdx"] == "MIT"
    items = {i["item"]: i["value"] for i in doc["ctuning_checklist"]}
    assert items["Archived (provide DOI)?"] == "10.5281/zenodo.1"
    assert items["Code licenses (if publicly available)?"].startswith("MIT (LICENSE, sha256 ")
    # The commit recorded by the runs is still the one to check out.
    assert f"git checkout {COMMIT}" in [c["command"] for c in doc["commands"]]


def test_cli_writes_facts_then_artifact_json_atomically(
    fake: FakeCampaign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A data root of its own whose raw campaign is the fixture's, so results start empty.
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    (data / "raw" / "fake").symlink_to(fake.raw)
    results = data / "results" / "fake"
    argv = ["report", "fake", "--data-dir", str(data), "--step"]
    # Without facts.json the check-list names the file and the command that writes it.
    assert cli_main([*argv, "checklist"]) == 2
    err = capsys.readouterr().err
    assert "facts.json" in err and "netstick campaign facts fake" in err
    # No plan, no facts: a mistyped campaign writes nothing.
    assert cli_main(["campaign", "facts", "nothing", "--data-dir", str(data)]) == 2
    assert "plan.json" in capsys.readouterr().err
    assert cli_main(["campaign", "facts", "fake", "--data-dir", str(data)]) == 0
    # The check-list reads the results alone: data/raw may be gone.
    (data / "raw" / "fake").unlink()
    assert cli_main([*argv, "checklist"]) == 0
    doc = json.loads((results / "artifact.json").read_text())
    assert doc["campaign"] == "fake"
    # No temporary left; the plan and the raw manifest beside the facts.
    assert sorted(p.name for p in results.iterdir()) == [
        "artifact.json",
        "facts.json",
        "plan.json",
        "raw-manifest.tsv",
    ]
    assert json.loads((results / "plan.json").read_text()) == json.loads(
        (fake.raw / "plan.json").read_text()
    )


def test_facts_hold_what_the_runs_recorded(fake: FakeCampaign, doc: dict[str, Any]) -> None:
    """facts.json's runs section: the one read of data/raw that the check-list words."""
    ran = json.loads((fake.results / "facts.json").read_text())["runs"]
    assert ran["campaign"] == "fake" and ran["plan"] == "plan.json"
    assert ran["git"] == {"recorded_commits": [COMMIT], "runs_from_dirty_tree": 0}
    assert ran["experiments"] == doc["experiments"]
    assert ran["hardware"] == doc["hardware"]["runs"]
    assert ran["software"]["kernel"] == ["6.1.0-fake"]
    assert ran["timing"]["time_to_run_s"] == doc["time"]["time_to_run_s"]
    [proto] = ran["prototypes"]
    # Words are the check-list's: the facts hold counts and values only.
    assert "warnings" not in proto and "rows" not in proto and "title" not in proto
    assert proto["executable"]["runs_without_sha256"] == 2
    assert proto["runs_recorded_before_prototype_records"] == 2


def test_an_older_facts_json_is_refused_with_the_command(tmp_path: Path) -> None:
    (tmp_path / "facts.json").write_text(json.dumps({"facts_schema": 1, "git": {}}))
    with pytest.raises(checklist.FactsMissing, match="netstick campaign facts"):
        checklist.collect(tmp_path)


def test_licence_is_named_with_its_file_and_hash(doc: dict[str, Any]) -> None:
    data = (REPO / "LICENSE").read_bytes()
    code = doc["licences"]["code"]
    assert (code["spdx"], code["file"]) == ("MIT", "LICENSE")
    assert code["sha256"] == hashlib.sha256(data).hexdigest()
    items = {i["item"]: i["value"] for i in doc["ctuning_checklist"]}
    assert items["Code licenses (if publicly available)?"] == (
        f"MIT (LICENSE, sha256 {code['sha256']})"
    )
    assert "MIT" in items["Data licenses (if publicly available)?"]


def test_citation_cff_is_valid_yaml_citing_the_campaign_sources() -> None:
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "authors"):
        assert cff.get(key), key
    assert cff["cff-version"] == "1.2.0"
    assert cff["authors"] == [{"name": "The Netstick developers"}]
    # The licence of the LICENSE file, by its SPDX identifier.
    assert cff["license"] == checkout.licence_file(REPO / "LICENSE", REPO)["spdx"] == "MIT"
    sources = " ".join(
        re.sub(
            r"\s+", " ", yaml.safe_load((REPO / "workflow" / "campaigns" / f).read_text())["source"]
        )
        for f in ("net-celerity.yaml", "envirostick.yaml")
    )
    refs = cff["references"]
    assert len(refs) == 2
    for ref in refs:
        assert ref["type"] == "thesis" and ref["year"] == 2024
        assert ref["institution"]["name"] == "Vrije Universiteit Amsterdam"
        assert ref["title"] in sources, ref["title"]
        assert ref["authors"][0]["family-names"] in sources
