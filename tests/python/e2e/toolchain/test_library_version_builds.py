"""Library versions built and run with Go: each declared version is built from the same source
against exactly that module version and every run records the version it was really linked
with; a version that does not build is named with the compiler's message (also by the workflow,
before any run); the committed module files are what the generator writes; go.mod stays tidy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from prototypes.contract import manifest as manifests
from prototypes.contract.library_builds import VersionBuild, VersionBuildError
from workflow import layout
from workflow.bench import scratch
from workflow.harness import cell as cells
from workflow.harness import run as harness
from workflow.harness.builds import build_version

from support.marks import needs_go, needs_reference_binary
from support.paths import REFERENCE_MANIFEST as MANIFEST
from support.paths import REPO, TEST_DATA

REF = REPO / "prototypes" / "reference"
KCP = "github.com/xtaci/kcp-go/v5"
QUIC = "github.com/quic-go/quic-go"
DATA = TEST_DATA / "versions"


@needs_go
def test_incompatible_version_names_library_version_and_compiler_message(tmp_path: Path) -> None:
    """quic-go v0.54.0 predates Conn.ConnectionStats, which the reference calls."""
    mod = tmp_path / "quic.mod"
    shutil.copy(DATA / "quic-go@v0.54.0.mod", mod)
    shutil.copy(DATA / "quic-go@v0.54.0.sum", tmp_path / "quic.sum")
    exe = tmp_path / "bin" / "netstick-ref"
    vb = VersionBuild(
        library=QUIC,
        version="v0.54.0",
        executable=exe,
        command=(
            "go",
            "build",
            "-trimpath",
            f"-modfile={mod}",
            "-o",
            str(exe),
            "./cmd/netstick-ref",
        ),
        cwd=REF,
        inputs=(mod,),
        missing_inputs=(),
        timeout_s=300,
    )
    with pytest.raises(VersionBuildError) as err:
        build_version(vb)
    text = str(err.value)
    assert f"library {QUIC} version v0.54.0 does not build" in text
    assert "ConnectionStats undefined" in text
    assert not exe.exists()


def _cell(tmp_path: Path, version: str) -> dict[str, Any]:
    doc = {
        "prototype": "prototypes/reference/prototype.yaml",
        "transport": "kcp",
        "library_version": version,
        "players": 2,
        "workload": "idle",
        "duration_s": 1.0,
        "sample_interval_s": 0.25,
        "baseline_s": 0.2,
        "isolation": "none",
    }
    cell = cells.validate(doc)
    cell.setdefault("cell_id", layout.derive_cell_id(cell))
    return cell


@needs_reference_binary
@needs_go
def test_each_version_runs_its_own_build_and_records_what_it_linked(tmp_path: Path) -> None:
    man = manifests.load(MANIFEST)
    pinned = man.transport("kcp").version
    linked = {}
    for version in ("pinned", "v5.6.24"):
        vb = man.version_build("kcp", version)
        if vb is not None:
            build_version(vb)  # cached: a no-op when up to date
            assert not vb.stale()
        out = tmp_path / version
        res = harness.run_cell(_cell(tmp_path, version), out)
        assert res.status == "ok", res.detail
        meta = json.loads((out / "meta.json").read_text())
        proto = meta["versions"]["prototypes"][0]
        linked[version] = proto["linked_versions"][KCP]
        assert proto["go_build"]["modules"][KCP] == linked[version]
        if vb is not None:
            assert proto["library_build"] == {"library": KCP, "version": "v5.6.24"}
            assert meta["commands"]["server"][0] == str(vb.executable)
            assert {Path(f["path"]).name for f in proto["lock_files"]} == {
                "v5@v5.6.24.mod",
                "v5@v5.6.24.sum",
            }
        else:
            assert proto["library_build"] is None
    assert linked == {"pinned": pinned, "v5.6.24": "v5.6.24"}


@needs_go
def test_go_modules_are_tidy_and_lint_checks_it(tmp_path: Path) -> None:
    lint = REPO.joinpath("Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "cd $(REF) && go mod tidy -diff" in lint
    assert "cd workflow/harness/netemu && go mod tidy -diff" in lint
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local"}
    for d in (REF, REPO / "workflow" / "harness" / "netemu"):
        res = subprocess.run(
            ["go", "mod", "tidy", "-diff"], cwd=d, capture_output=True, text=True, env=env
        )
        assert res.returncode == 0, res.stdout + res.stderr
    # A direct import marked indirect (as go.mod once had it) is what the check catches.
    untidy = tmp_path / "untidy.mod"
    text = (REF / "go.mod").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(f"\t{KCP} "))
    untidy.write_text(text.replace(line, line + " // indirect"))
    shutil.copy(REF / "go.sum", tmp_path / "untidy.sum")
    res = subprocess.run(
        ["go", "mod", "tidy", "-diff", f"-modfile={untidy}"],
        cwd=REF,
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode != 0
    assert f"-\t{KCP}" in res.stdout


@needs_reference_binary
@needs_go
def test_workflow_stops_on_a_version_that_does_not_build(tmp_path: Path) -> None:
    """The workflow builds the plan's versions before any run; quic-go v0.54.0 (declared in a
    copy of the reference) stops it with the library, the version and the compiler's message."""
    proto = tmp_path / "proto"
    shutil.copytree(REF, proto, ignore=shutil.ignore_patterns("bin", "versions"))
    (proto / "bin").mkdir()
    shutil.copy(REF / "bin" / "netstick-ref", proto / "bin")
    doc = yaml.safe_load((proto / "prototype.yaml").read_text())
    del doc["build"]  # the pinned executable is there; nothing else to build
    doc["library_builds"]["libraries"] = {QUIC: ["v0.54.0"]}
    (proto / "prototype.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    versions = proto / "versions" / "github.com" / "quic-go"
    versions.mkdir(parents=True)
    for suffix in (".mod", ".sum"):
        shutil.copy(DATA / f"quic-go@v0.54.0{suffix}", versions / f"quic-go@v0.54.0{suffix}")
    prototype = {
        "name": "reference",
        "manifest": str(proto / "prototype.yaml"),
        "transports": ["quic"],
        "versions": {"quic": ["v0.54.0"]},
    }
    doc = scratch.campaign_doc(
        "v", "versions", prototype, block="b", seed=3, repetitions=2, defaults={"duration_s": 2},
        players=[4],
    )  # fmt: skip
    res = scratch.run(tmp_path, scratch.campaign_file(tmp_path, doc), "--list-rules")
    assert res.returncode != 0
    assert f"library {QUIC} version v0.54.0 does not build" in res.stderr
    assert "ConnectionStats undefined" in res.stderr


@needs_go
def test_committed_module_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    """make versions is reproducible: regenerating one version gives the committed files."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", REF / "versions" / "generate.py")
    assert spec is not None and spec.loader is not None
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    mod = generate.generate(KCP, "v5.7.5", tmp_path)
    committed = REF / "versions" / f"{KCP}@v5.7.5.mod"
    assert mod.read_text() == committed.read_text()
    assert mod.with_suffix(".sum").read_text() == committed.with_suffix(".sum").read_text()
