"""The campaign's RO-Crate: readable by rocrate, every file checksummed, the raw data manifested."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from rocrate.rocrate import ROCrate

from report import checklist, crate
from workflow.campaign.facts import runs
from workflow.cli.main import main as cli_main

from support.finished_campaign import COMMIT, FakeCampaign, collect, make_campaign
from support.paths import REPO


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[FakeCampaign, dict[str, Any]]:
    fake = make_campaign(tmp_path_factory.mktemp("crate"))
    doc = collect(fake.results, fake.raw)
    checklist.write(doc, fake.results / "artifact.json")
    return fake, doc


def _write(tmp_path: Path, campaign: tuple[FakeCampaign, dict[str, Any]], html: bool) -> Path:
    fake, doc = campaign
    crate_dir = tmp_path / "report" / "_output" / "fake"
    crate_dir.mkdir(parents=True)
    if html:
        (crate_dir / "index.html").write_text("<html><body>report</body></html>\n")
    crate.write_crate(crate_dir, fake.results, doc)
    return crate_dir


def test_every_file_entity_exists_with_its_size_and_hash(
    tmp_path: Path, campaign: tuple[FakeCampaign, dict[str, Any]]
) -> None:
    crate_dir = _write(tmp_path, campaign, html=True)
    meta = json.loads((crate_dir / "ro-crate-metadata.json").read_text())
    files = [e for e in meta["@graph"] if e.get("@type") == "File"]
    ids = {e["@id"] for e in files}
    # cells.csv, findings.json and metrics.json exist in the fake results, runs.csv and the
    # others do not.
    assert ids == {
        "index.html",
        "data/cells.csv",
        "data/findings.json",
        "data/metrics.json",
        "data/artifact.json",
        "data/plan.json",
        "data/raw-manifest.tsv",
    }
    for e in files:
        path = crate_dir / e["@id"]
        assert path.is_file(), e["@id"]
        assert e["sha256"] == _sha(path), e["@id"]
        assert int(e["contentSize"]) == path.stat().st_size, e["@id"]
        assert e["encodingFormat"]
    by_id = {e["@id"]: e for e in meta["@graph"]}
    assert by_id["index.html"]["encodingFormat"] == "text/html"
    assert _sha(crate_dir / "data" / "plan.json") == _sha(campaign[0].raw / "plan.json")

    root = by_id["./"]
    assert root["name"] == "Netstick campaign fake"
    assert root["description"] and root["keywords"] and root["datePublished"]
    # The code's licence (LICENSE, MIT) by its SPDX URL, with the file's hash.
    assert root["license"] == {"@id": "https://spdx.org/licenses/MIT"}
    licence = by_id["https://spdx.org/licenses/MIT"]
    assert licence["identifier"] == "MIT"
    assert _sha(REPO / "LICENSE") in licence["description"]
    software = by_id["#netstick"]
    assert software["@type"] == "SoftwareApplication" and software["version"] == COMMIT
    action = by_id["#campaign-fake"]
    assert action["@type"] == "CreateAction"
    assert action["instrument"] == {"@id": "#netstick"}
    assert action["startTime"] == campaign[1]["time"]["start_time"]
    assert action["endTime"] == campaign[1]["time"]["end_time"]
    assert {r["@id"] for r in action["result"]} == ids - {"data/plan.json"}

    # rocrate reads it back with the same entities.
    back = ROCrate(crate_dir)
    assert back.name == "Netstick campaign fake"
    assert {e.id for e in back.data_entities} == ids


def test_raw_manifest_lists_every_raw_file_with_its_hash(
    tmp_path: Path, campaign: tuple[FakeCampaign, dict[str, Any]]
) -> None:
    crate_dir = _write(tmp_path, campaign, html=True)
    with (crate_dir / "data" / "raw-manifest.tsv").open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    raw = campaign[0].raw
    assert len(rows) == campaign[0].raw_files
    assert {r["path"]: r["sha256"] for r in rows} == _tree(raw)
    for r in rows:
        assert int(r["bytes"]) == (raw / r["path"]).stat().st_size
    # The raw data themselves are not copied.
    assert not (crate_dir / "data" / "fake-tcp-p2-aaaa").exists()


def test_a_second_write_gives_the_same_files(
    tmp_path: Path, campaign: tuple[FakeCampaign, dict[str, Any]]
) -> None:
    crate_dir = _write(tmp_path, campaign, html=True)
    first = _tree(crate_dir)
    crate.write_crate(crate_dir, campaign[0].results, campaign[1])
    assert _tree(crate_dir) == first


def test_no_absolute_paths_and_a_missing_report_is_a_warning(
    tmp_path: Path,
    campaign: tuple[FakeCampaign, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    crate_dir = _write(tmp_path, campaign, html=False)
    assert "index.html not found" in capsys.readouterr().err
    text = (crate_dir / "ro-crate-metadata.json").read_text()
    meta = json.loads(text)
    assert "index.html" not in {e["@id"] for e in meta["@graph"]}
    assert str(tmp_path) not in text
    for s in _strings(meta):
        assert not s.startswith("/"), s
    assert sorted(p.name for p in crate_dir.iterdir()) == ["data", "ro-crate-metadata.json"]


def test_cli_reads_artifact_json(
    tmp_path: Path,
    campaign: tuple[FakeCampaign, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = campaign[0]
    data = fake.raw.parent.parent
    argv = ["report", "fake", "--data-dir", str(data), "--report-dir", str(tmp_path / "out")]
    assert cli_main([*argv, "--step", "crate"]) == 0
    assert (tmp_path / "out" / "fake" / "ro-crate-metadata.json").is_file()
    # Without artifact.json the error names the file and how to make it.
    bare = tmp_path / "bare"
    (bare / "raw").mkdir(parents=True)
    (bare / "raw" / "fake").symlink_to(fake.raw)
    code = cli_main(["report", "fake", "--data-dir", str(bare), "--step", "crate"])
    assert code == 2
    err = capsys.readouterr().err
    assert "artifact.json" in err and "--step checklist" in err


def test_runs_recorded_before_prototype_records_still_name_their_prototype(
    tmp_path: Path, campaign: tuple[FakeCampaign, dict[str, Any]]
) -> None:
    """The fixture's meta.json files predate versions.prototypes: the prototype is the Go
    reference its cells name, with the Go version and modules those runs recorded and no
    executable hash (none was taken)."""
    crate_dir = _write(tmp_path, campaign, html=True)
    by_id = {e["@id"]: e for e in json.loads((crate_dir / "ro-crate-metadata.json").read_text())[
        "@graph"
    ]}  # fmt: skip
    proto = by_id["#prototype-reference"]
    assert proto["identifier"] == "prototypes/reference/prototype.yaml"
    assert by_id[proto["programmingLanguage"]["@id"]]["name"] == "Go"
    assert proto["runtimePlatform"] == "go1.26.8"
    assert "sha256" not in proto and "no executable sha256" in proto["description"]
    kcp = by_id["#library-github.com/xtaci/kcp-go/v5@v5.6.72"]
    assert (
        kcp["softwareVersion"] == "v5.6.72" and {"@id": kcp["@id"]} in proto["softwareRequirements"]
    )
    assert by_id["#netstick"]["hasPart"] == [{"@id": "#prototype-reference"}]


def test_raw_manifest_leaves_out_runs_in_flight_and_locks(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    (raw / "cell" / "r1").mkdir(parents=True)
    (raw / "cell" / "r1" / "status.json").write_text("{}")
    (raw / "cell" / ".r2.tmp-123" / "logs").mkdir(parents=True)
    (raw / "cell" / ".r2.tmp-123" / "logs" / "server.ticks.csv").write_text("t\n")
    (raw / "cell" / ".r2.lock").write_text('{"pid": 123}')
    out = tmp_path / "manifest.tsv"
    assert runs.raw_manifest(raw, out) == 1
    assert [line.split("\t")[0] for line in out.read_text().splitlines()[1:]] == [
        "cell/r1/status.json"
    ]
