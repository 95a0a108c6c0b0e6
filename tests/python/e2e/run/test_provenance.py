"""Provenance of the prototype that actually ran: each run's meta.json, the campaign's facts,
the artifact appendix, the report and the RO-Crate name it (language, runtime, libraries and
versions, the sha256 of the executable the harness started, lock files), and say so when the
executable changed during a campaign.

Runs are real: the harness runs the Python stand-in (tests/python/support/fake-prototype.yaml)
and, where it is built, the Go reference, on loopback, for half a second each. The report's test
renders too (marked render as well as e2e).
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from prototypes.contract import manifest as manifests
from report import checklist, crate, render
from workflow import layout
from workflow.campaign import facts
from workflow.harness import cell as cells
from workflow.harness import environment
from workflow.harness import run as harness
from workflow.harness.state import Outcome

from support import report_checks as rc
from support import report_fixture
from support.marks import needs_r, needs_reference_binary
from support.paths import FAKE_PROTOTYPE as FAKE_SCRIPT
from support.paths import REFERENCE_BINARY, REPO
from support.raw_campaign import RawCampaign

FAKE_MANIFEST = "tests/python/support/fake-prototype.yaml"
REFERENCE_MANIFEST = "prototypes/reference/prototype.yaml"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cell(manifest: str, run_id: str) -> dict[str, Any]:
    cell = cells.validate(
        {
            "campaign": "prov",
            "run_id": run_id,
            "prototype": manifest,
            "transport": "tcp",
            "players": 2,
            "workload": "stream",
            "params": {"size": 100, "rate": 30},
            "duration_s": 0.5,
            "sample_interval_s": 0.25,
            "connect_timeout_s": 15,
            "baseline_s": 0,
            "isolation": "none",
        }
    )
    cell["cell_id"] = layout.derive_cell_id(cell)
    return cell


def _run(manifest: str, run_id: str, pool: Path) -> tuple[dict[str, Any], Path]:
    cell = _cell(manifest, run_id)
    res = harness.run_cell(cell, pool / cell["cell_id"] / run_id)
    assert res.status == "ok", res.detail
    return cell, res.path


def _meta(run: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run / "meta.json").read_text())
    return doc


def _logged_versions(run: Path) -> dict[str, str]:
    """library_versions as the run's server wrote them into its own server.meta.json."""
    versions: dict[str, str] = json.loads((run / "logs" / "server.meta.json").read_text())[
        "library_versions"
    ]
    return versions


def _campaign(root: Path, name: str, runs: list[tuple[dict[str, Any], Path]]) -> Path:
    """data/raw/<name> holding copies of finished runs, their ok records and a plan."""
    raw = RawCampaign(root / "raw", name)
    for cell, path in runs:
        raw.copy_run(cell, path)
    raw.plan(
        [cell for cell, _ in runs],
        plan_schema=1,
        seed=1,
        order="seeded shuffle",
        cells_total=len({c["cell_id"] for c, _ in runs}),
        runs_total=len(runs),
        unavailable=[],
    )
    return raw.dir


def _artifact(root: Path, raw: Path) -> dict[str, Any]:
    """The workflow's facts and check-list steps on raw, into root/results/<campaign>."""
    results = root / "results" / raw.name
    results.mkdir(parents=True, exist_ok=True)
    facts.write(results, raw, REPO)
    doc = checklist.collect(results)
    checklist.write(doc, results / "artifact.json")
    return doc


def _crate(root: Path, raw: Path, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = root / "crate" / raw.name
    out.mkdir(parents=True)
    crate.write_crate(out, root / "results" / raw.name, doc)
    meta = json.loads((out / "ro-crate-metadata.json").read_text())
    return {e["@id"]: e for e in meta["@graph"]}


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Finished runs: two of the Python stand-in, two of a copy of it whose script changed
    between them (a rebuild in the middle of a campaign), one of the Go reference if built."""
    root = tmp_path_factory.mktemp("provenance")
    runs: dict[str, Any] = {"root": root}
    runs["fake"] = [_run(FAKE_MANIFEST, f"r{k}", root / "pool") for k in (1, 2)]
    copy = root / "proto"
    copy.mkdir()
    shutil.copy(REPO / FAKE_MANIFEST, copy / "fake-prototype.yaml")
    shutil.copy(FAKE_SCRIPT, copy / "fake_prototype.py")
    script = copy / "fake_prototype.py"
    runs["changed_shas"] = [_sha(script)]
    runs["changed"] = [_run(str(copy / "fake-prototype.yaml"), "r1", root / "pool")]
    script.write_text(script.read_text() + "\n# rebuilt between two runs of the campaign\n")
    runs["changed_shas"].append(_sha(script))
    runs["changed"].append(_run(str(copy / "fake-prototype.yaml"), "r2", root / "pool"))
    if REFERENCE_BINARY.is_file():
        runs["reference"] = [_run(REFERENCE_MANIFEST, "r1", root / "pool")]
    return runs


# -- one run's meta.json ----------------------------------------------------------------------


def test_a_run_records_the_python_prototype_that_ran(pool: dict[str, Any]) -> None:
    man = manifests.load(REPO / FAKE_MANIFEST)
    for _cell_doc, run in pool["fake"]:
        versions = _meta(run)["versions"]
        # The Go reference's toolchain and modules are not what ran here.
        assert "go_modules" not in versions and "go_version" not in versions
        [proto] = versions["prototypes"]
        assert (proto["name"], proto["language"]) == ("fake", "python")
        assert proto["manifest"]["path"] == FAKE_MANIFEST
        assert proto["manifest"]["sha256"] == _sha(REPO / FAKE_MANIFEST)
        assert proto["executable"]["path"] == "tests/python/support/fake_prototype.py"
        assert proto["executable"]["sha256"] == _sha(FAKE_SCRIPT)
        # The launcher ({python}: the interpreter running netstick), resolved, and its version.
        launcher = Path(sys.executable).resolve()
        assert proto["launcher"]["sha256"] == _sha(launcher)
        assert proto["launcher"]["path"] in (
            str(launcher),
            launcher.relative_to(REPO).as_posix() if launcher.is_relative_to(REPO) else "",
        )
        assert proto["runtime"] == f"Python {platform.python_version()}"
        assert proto["library_versions"] == dict(man.library_versions)
        # What the processes themselves reported in their <proc>.meta.json.
        assert set(proto["processes"]) == {"server", "client-0"}
        for proc in proto["processes"].values():
            assert proc["library_versions"] == _logged_versions(run)
            assert set(proc["library_versions"]) == {"python"}
        assert proto["lock_files"] == []
        assert "go_modules" not in proto and "go_build" not in proto


@needs_reference_binary
def test_a_run_of_the_go_reference_names_go_and_its_modules(pool: dict[str, Any]) -> None:
    [(_cell_doc, run)] = pool["reference"]
    [proto] = _meta(run)["versions"]["prototypes"]
    assert (proto["name"], proto["language"], proto["launcher"]) == ("reference", "go", None)
    assert proto["executable"]["path"] == "prototypes/reference/bin/netstick-ref"
    assert proto["executable"]["sha256"] == _sha(REFERENCE_BINARY)
    # The toolchain and modules the binary was built with, from its build info.
    assert proto["runtime"].startswith("go1.") and proto["runtime"] == proto["go_build"]["go"]
    assert proto["go_build"]["modules"]["github.com/quic-go/quic-go"]
    go_mod = REPO / "prototypes" / "reference" / "go.mod"
    assert proto["go_modules"] == environment.go_modules(go_mod)
    assert {lf["path"]: lf["sha256"] for lf in proto["lock_files"]} == {
        "prototypes/reference/go.mod": _sha(go_mod),
        "prototypes/reference/go.sum": _sha(go_mod.with_name("go.sum")),
    }
    for proc in proto["processes"].values():
        assert proc["library_versions"]["github.com/quic-go/quic-go"]


def test_the_hash_is_of_the_file_started_not_of_the_file_later(tmp_path: Path) -> None:
    """The script is replaced while the run goes on: meta.json keeps the started file's hash."""
    copy = tmp_path / "proto"
    copy.mkdir()
    shutil.copy(REPO / FAKE_MANIFEST, copy / "fake-prototype.yaml")
    script = copy / "fake_prototype.py"
    shutil.copy(FAKE_SCRIPT, script)
    started = _sha(script)
    cell = _cell(str(copy / "fake-prototype.yaml"), "r1")
    cell["duration_s"] = 1.5
    outcome: list[Outcome] = []
    worker = threading.Thread(
        target=lambda: outcome.append(harness.run_cell(cell, tmp_path / "run")), daemon=True
    )
    worker.start()
    deadline = time.monotonic() + 20
    while not list(tmp_path.glob(".run.tmp-*/logs/client-0.meta.json")):
        assert time.monotonic() < deadline, "the client never started"
        time.sleep(0.05)
    script.write_text(script.read_text() + "\n# changed while the run went on\n")
    worker.join(timeout=60)
    assert outcome and outcome[0].status == "ok", outcome
    [proto] = _meta(outcome[0].path)["versions"]["prototypes"]
    assert proto["executable"]["sha256"] == started != _sha(script)


# -- the campaign: facts, artifact, report, crate ---------------------------------------------


@pytest.fixture(scope="module")
def python_campaign(pool: dict[str, Any]) -> dict[str, Any]:
    raw = _campaign(pool["root"], "python-only", pool["fake"])
    doc = _artifact(pool["root"], raw)
    return {"raw": raw, "doc": doc, "crate": _crate(pool["root"], raw, doc), "runs": pool["fake"]}


def test_facts_describe_the_campaigns_prototypes_as_the_checkout_holds_them(
    python_campaign: dict[str, Any],
) -> None:
    written = json.loads((python_campaign["raw"].parents[1] / "results" / "python-only" /
                          "facts.json").read_text())  # fmt: skip
    [proto] = written["prototypes"]
    assert (proto["name"], proto["language"]) == ("fake", "python")
    assert proto["manifest"] == {
        "path": FAKE_MANIFEST,
        "sha256": _sha(REPO / FAKE_MANIFEST),
        "bytes": (REPO / FAKE_MANIFEST).stat().st_size,
    }
    assert proto["executable"]["sha256"] == _sha(FAKE_SCRIPT)
    assert "go_modules" not in proto


def test_artifact_names_python_its_versions_and_the_scripts_hash(
    python_campaign: dict[str, Any],
) -> None:
    doc = python_campaign["doc"]
    [proto] = doc["prototypes"]
    assert (proto["name"], proto["language"], proto["manifest"]) == (
        "fake",
        "python",
        FAKE_MANIFEST,
    )
    assert proto["runtime"] == [f"Python {platform.python_version()}"]
    assert proto["library_versions"] == {"python": ["3.11"]}
    logged = _logged_versions(python_campaign["runs"][0][1])
    assert proto["reported_library_versions"] == {k: [v] for k, v in logged.items()}
    exe = proto["executable"]
    assert exe["sha256"] == [_sha(FAKE_SCRIPT)] and exe["runs_per_sha256"] == {_sha(FAKE_SCRIPT): 2}
    assert exe["same_in_all_runs"] is True and proto["warnings"] == []
    assert "go_modules" not in proto
    assert doc["software"]["go"] == "no Go prototype ran in this campaign"
    items = {i["item"]: i["value"] for i in doc["ctuning_checklist"]}
    assert "fake prototype (python, tests/python/support/fake-prototype.yaml" in items["Program"]
    assert "python 3.11" in items["Program"]
    assert _sha(FAKE_SCRIPT) in items["Binary"] and "in all 2 runs" in items["Binary"]
    assert f"fake run by Python {platform.python_version()}" in items["Run-time environment"]
    assert items["Compilation"].startswith("fake: none")
    # Nothing of the Go reference where it did not run.
    text = json.dumps({k: items[k] for k in ("Program", "Compilation", "Binary")})
    assert "netstick-ref" not in text and "make build" not in text and "go.mod" not in text
    functional = {b["badge"]: b for b in doc["acm_badges"]}["Artifacts Evaluated – Functional"]  # noqa: RUF001
    sha_check = [c for c in functional["checks"] if "sha256" in c["check"]]
    assert [c["met"] for c in sha_check] == [True]


def test_crate_has_the_python_prototype_with_its_libraries(
    python_campaign: dict[str, Any],
) -> None:
    graph = python_campaign["crate"]
    proto = graph["#prototype-fake"]
    assert proto["@type"] == "SoftwareApplication" and proto["identifier"] == FAKE_MANIFEST
    assert proto["sha256"] == _sha(FAKE_SCRIPT)
    assert proto["runtimePlatform"] == f"Python {platform.python_version()}"
    assert graph[proto["programmingLanguage"]["@id"]] == {
        "@id": "#language-python",
        "@type": "ComputerLanguage",
        "name": "Python",
    }
    libraries = [graph[r["@id"]] for r in proto["softwareRequirements"]]
    assert [(lib["name"], lib["softwareVersion"]) for lib in libraries] == [
        ("python", _logged_versions(python_campaign["runs"][0][1])["python"])
    ]
    assert {"@id": proto["@id"]} in graph["#netstick"]["hasPart"]
    assert not [i for i in graph if i.startswith("#library-github.com")]


@needs_reference_binary
def test_a_campaign_of_both_names_both_and_go_only_for_the_reference(
    pool: dict[str, Any],
) -> None:
    raw = _campaign(pool["root"], "mixed", pool["fake"] + pool["reference"])
    doc = _artifact(pool["root"], raw)
    protos = {p["name"]: p for p in doc["prototypes"]}
    assert set(protos) == {"fake", "reference"}
    assert "go_modules" not in protos["fake"]
    ref = protos["reference"]
    assert ref["language"] == "go" and ref["executable"]["sha256"] == [_sha(REFERENCE_BINARY)]
    assert ref["go_modules"]["github.com/quic-go/quic-go"]
    assert doc["software"]["go"]["prototypes"] == ["reference"]
    items = {i["item"]: i["value"] for i in doc["ctuning_checklist"]}
    assert "reference: built with `make build` (go 1." in items["Compilation"]
    assert "fake: none" in items["Compilation"]
    graph = _crate(pool["root"], raw, doc)
    go = graph["#prototype-reference"]
    assert graph[go["programmingLanguage"]["@id"]]["name"] == "Go"
    assert go["sha256"] == _sha(REFERENCE_BINARY)
    requirements = {graph[r["@id"]]["name"] for r in go["softwareRequirements"]}
    assert {"github.com/quic-go/quic-go", "libenet"} <= requirements


@pytest.fixture(scope="module")
def changed_campaign(pool: dict[str, Any]) -> dict[str, Any]:
    raw = _campaign(pool["root"], "changed", pool["changed"])
    doc = _artifact(pool["root"], raw)
    return {"raw": raw, "doc": doc, "crate": _crate(pool["root"], raw, doc)}


def test_an_executable_changed_mid_campaign_is_flagged(changed_campaign: dict[str, Any],
                                                       pool: dict[str, Any]) -> None:  # fmt: skip
    doc = changed_campaign["doc"]
    [proto] = doc["prototypes"]
    first, second = pool["changed_shas"]
    assert proto["executable"]["runs_per_sha256"] == {first: 1, second: 1}
    assert proto["executable"]["same_in_all_runs"] is False
    [warning] = proto["warnings"]
    assert "changed during the campaign" in warning and first in warning and second in warning
    # The copy lies outside the repository: shown by name, never by machine path.
    assert proto["manifest"] == "fake-prototype.yaml (outside the repository)"
    written = (
        changed_campaign["raw"].parents[1] / "results" / "changed" / "facts.json"
    ).read_text()
    assert str(pool["root"]) not in json.dumps(doc) and str(pool["root"]) not in written
    # The checkout now holds the second build: matched with the runs' through facts.json.
    assert proto["checkout_now"]["executable_sha256"] == second
    items = {i["item"]: i["value"] for i in doc["ctuning_checklist"]}
    assert "WARNING: 2 different sha256 over 2 runs" in items["Binary"]
    functional = {b["badge"]: b for b in doc["acm_badges"]}["Artifacts Evaluated – Functional"]  # noqa: RUF001
    assert "sha256" in functional["missing"]
    entity = changed_campaign["crate"]["#prototype-fake"]
    assert entity["identifier"] == "fake-prototype.yaml (outside the repository)"
    assert entity["sha256"] == [first, second] and "WARNING: " in entity["description"]


@pytest.mark.render
@needs_r
def test_the_report_names_the_prototypes_and_warns_of_a_changed_executable(
    pool: dict[str, Any],
) -> None:
    """One campaign of the Python stand-in (one executable) and of its copy whose script
    changed between runs: both named, only the copy warned about, before any number too."""
    raw = _campaign(pool["root"], "both", pool["fake"] + pool["changed"])
    doc = _artifact(pool["root"], raw)
    results = pool["root"] / "report" / "results"
    report_fixture.build(results)
    checklist.write(doc, results / "artifact.json")
    shutil.copyfile(pool["root"] / "results" / raw.name / "plan.json", results / "plan.json")
    html = pool["root"] / "report" / "index.html"
    render.render({"results": str(results)}, html)
    words = rc.text(html.read_text())
    start = words.rindex("Prototypes that ran")
    section = words[start : words.index("Lock files of the checkout", start)]
    copy = section.index("fake (python, fake-prototype.yaml (outside the repository))")
    original, changed = section[:copy], section[copy:]
    assert "fake (python, tests/python/support/fake-prototype.yaml)" in original
    assert f"Python {platform.python_version()}" in original
    assert _sha(FAKE_SCRIPT) in original and "the same in all 2 runs" in original
    assert "Warning:" not in original
    # The Go reference did not run: neither it nor Go modules are named.
    assert "netstick-ref" not in section and "Go modules" not in section
    warning = "Warning: the executable of fake changed during the campaign"
    assert warning in changed and all(sha in changed for sha in pool["changed_shas"])
    # Said before any number too.
    assert words.count(warning) == 2
    assert words.index(warning) < words.index("Computed by the stats stage")
