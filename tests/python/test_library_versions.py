"""Library versions as an experiment axis: the manifest declares them, a campaign names them per
transport (one cell each), each is built from the same source against exactly that module
version, every run records the version it was really linked with, and go.mod stays tidy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, needs_reference_binary

from prototypes.contract import manifest as manifests
from prototypes.contract.library_builds import VersionBuild, VersionBuildError
from workflow import layout
from workflow.campaign import expand as campaigns
from workflow.harness import cell as cells
from workflow.harness import run as harness
from workflow.harness.builds import build_version

REF = REPO / "prototypes" / "reference"
MANIFEST = REF / "prototype.yaml"
KCP = "github.com/xtaci/kcp-go/v5"
QUIC = "github.com/quic-go/quic-go"
DATA = Path(__file__).with_name("data") / "versions"
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="no go command on PATH")


def _campaign(tmp_path: Path, versions: object, transports: list[str] | None = None) -> Path:
    doc = {
        "name": "v",
        "description": "versions",
        "seed": 3,
        "repetitions": 2,
        "defaults": {"duration_s": 2},
        "matrix": [
            {
                "name": "b",
                "prototypes": [
                    {
                        "name": "reference",
                        "transports": transports or ["kcp", "quic", "tcp"],
                        "versions": versions,
                    }
                ],
                "players": [4],
                "workloads": [{"name": "idle"}],
            }
        ],
    }
    path = tmp_path / "v.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_manifest_declares_versions_per_library() -> None:
    man = manifests.load(MANIFEST)
    assert man.library_builds is not None
    # At least three versions (the pinned one and two more) of kcp-go and quic-go, two of the
    # WebRTC and WebSocket libraries.
    for transport, least in (("kcp", 3), ("quic", 3), ("webrtc", 2), ("ws", 2)):
        assert len(man.declared_versions(transport)) - 1 >= least, transport
    vb = man.version_build("kcp", "v5.7.5")
    assert vb is not None and vb.library == KCP
    assert vb.executable == REF / "bin" / "versions" / f"{KCP}@v5.7.5" / "netstick-ref"
    assert f"-modfile=versions/{KCP}@v5.7.5.mod" in vb.command
    assert vb.missing_inputs == ()
    # The pinned version, by name or by number, is the manifest's own executable.
    assert man.version_build("kcp", "pinned") is None
    assert man.for_version("kcp", man.transport("kcp").version).executable == man.executable


def test_every_declared_version_has_exact_module_files() -> None:
    """Each .mod requires exactly the declared version of its library and has its .sum."""
    man = manifests.load(MANIFEST)
    assert man.library_builds is not None
    for library, versions in man.library_builds.libraries.items():
        for version in versions:
            mod = REF / "versions" / f"{library}@{version}.mod"
            assert mod.with_suffix(".sum").is_file(), mod
            text = mod.read_text()
            assert f"\t{library} {version}\n" in text, (mod, "does not require", version)
            assert f"{library} {version} h1:" in mod.with_suffix(".sum").read_text()


def test_undeclared_library_in_manifest_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load(MANIFEST.read_text())
    doc["library_builds"]["libraries"]["example.com/nothing"] = ["v1.0.0"]
    doc["library_builds"]["executable"] = "bin/{version}/x"
    with pytest.raises(manifests.ManifestError) as err:
        manifests.parse(doc, tmp_path / "prototype.yaml")
    text = str(err.value)
    assert "key library_builds.libraries.example.com/nothing: no transport uses this" in text
    assert "key library_builds.executable: must contain {library} and {version}" in text


def test_versions_become_cells(tmp_path: Path) -> None:
    path = _campaign(tmp_path, {"kcp": ["pinned", "v5.7.5"], "quic": ["v0.60.0", "v0.57.0"]})
    plan = campaigns.plan(path)
    got = sorted(
        {(r.cell["transport"], r.cell["library_version"], r.cell["cell_id"]) for r in plan.runs}
    )
    assert [(t, v) for t, v, _ in got] == [
        ("kcp", "pinned"),
        ("kcp", "v5.7.5"),
        ("quic", "v0.57.0"),
        ("quic", "v0.60.0"),
        ("tcp", "pinned"),  # not named: pinned
    ]
    ids = [cid for _, _, cid in got]
    assert len(set(ids)) == 5
    assert ids[1].startswith("reference-v5.7.5-kcp-p4-idle-")
    assert ids[0].startswith("reference-kcp-p4-idle-")
    assert len(plan.runs) == 10  # two repetitions each
    builds = campaigns.version_builds_of(plan)
    assert sorted((b.library, b.version) for b in builds) == [
        (QUIC, "v0.57.0"),
        (QUIC, "v0.60.0"),
        (KCP, "v5.7.5"),
    ]


def test_version_list_applies_to_every_transport(tmp_path: Path) -> None:
    plan = campaigns.plan(_campaign(tmp_path, ["pinned"]))
    assert {r.cell["library_version"] for r in plan.runs} == {"pinned"}


@pytest.mark.parametrize(
    ("versions", "transports", "expected"),
    [
        (
            {"kcp": ["v9.9.9"]},
            None,
            f"key prototypes.0.versions.kcp.0: prototypes/reference/prototype.yaml: library "
            f"{KCP} (transport kcp) has no version 'v9.9.9'; declared: pinned, v5.6.72, v5.7.5",
        ),
        (
            ["v5.7.5"],
            ["kcp", "tcp"],
            "key prototypes.0.versions.0: prototypes/reference/prototype.yaml: library Go net "
            "(standard library) (transport tcp) has no version 'v5.7.5'; declared: pinned, go",
        ),
        (
            {"udp": ["pinned"]},
            ["kcp"],
            "key prototypes.0.versions.udp: 'udp' is not among this entry's transports; "
            "expected one of kcp",
        ),
    ],
)
def test_undeclared_versions_are_refused_when_planning(
    tmp_path: Path, versions: object, transports: list[str] | None, expected: str
) -> None:
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(_campaign(tmp_path, versions, transports))
    assert expected in str(err.value)
    assert "v.yaml" in str(err.value)


def test_missing_module_files_are_refused_when_planning(tmp_path: Path) -> None:
    proto = tmp_path / "proto"
    shutil.copytree(REF, proto, ignore=shutil.ignore_patterns("bin", "versions"))
    doc = _campaign(tmp_path, {"kcp": ["v5.7.5"]}, ["kcp"])
    camp = yaml.safe_load(doc.read_text())
    camp["matrix"][0]["prototypes"][0]["manifest"] = "proto/prototype.yaml"
    doc.write_text(yaml.safe_dump(camp, sort_keys=False))
    with pytest.raises(campaigns.CampaignError) as err:
        campaigns.plan(doc)
    assert f"library {KCP} version v5.7.5: missing versions/{KCP}@v5.7.5.mod" in str(err.value)


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
    camp = _campaign(tmp_path, {"quic": ["v0.54.0"]}, ["quic"])
    text = yaml.safe_load(camp.read_text())
    text["matrix"][0]["prototypes"][0]["manifest"] = "proto/prototype.yaml"
    camp.write_text(yaml.safe_dump(text, sort_keys=False))
    res = subprocess.run(
        [str(REPO / ".venv" / "bin" / "snakemake"), "--config", f"campaign={camp}", "--list-rules"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode != 0
    assert f"library {QUIC} version v0.54.0 does not build" in res.stderr
    assert "ConnectionStats undefined" in res.stderr


def test_comparisons_keep_versions_of_one_transport_apart() -> None:
    """Two versions of kcp are two cells: compared with each other, never pooled against quic."""
    import polars as pl

    from stats import analyse

    rows = []
    for transport, version, rtt_us in (
        ("kcp", "pinned", 1000.0),
        ("kcp", "v5.7.5", 2000.0),
        ("quic", "pinned", 1000.0),
    ):
        for i in range(8):
            rows.append(
                {
                    "status": "ok", "prototype": "reference", "players": 4, "workload": "idle",
                    "params": "{}", "network_profile": "lan", "duration_s": 2.0,
                    "transport": transport, "library_version": version,
                    "cell_id": f"{transport}-{version}", "rtt_net_p50_us": rtt_us + i,
                    "rtt_net_p99_us": rtt_us + i, "server_cpu_cores": 0.1,
                }
            )  # fmt: skip
    comps = analyse.comparisons(pl.DataFrame(rows))
    p50 = comps.filter(pl.col("metric") == "rtt_net_p50_us")
    pairs = {(r["a"], r["b"]): r for r in p50.iter_rows(named=True)}
    # kcp@v5.7.5 against quic (another transport at another version) is not a comparison.
    assert set(pairs) == {("kcp", "kcp@v5.7.5"), ("kcp", "quic")}
    assert pairs[("kcp", "kcp@v5.7.5")]["ratio_b_over_a"] == pytest.approx(2003.5 / 1003.5)
    # pinned kcp alone against quic: equal medians, not pooled with the slower version
    assert pairs[("kcp", "quic")]["ratio_b_over_a"] == pytest.approx(1.0)
    assert pairs[("kcp", "quic")]["n_a"] == 8


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


def test_plan_description_lists_the_versions(tmp_path: Path) -> None:
    from workflow.campaign import progress

    plan = campaigns.plan(_campaign(tmp_path, {"kcp": ["pinned", "v5.7.5"], "quic": ["v0.60.0"]}))
    text = progress.describe_plan(plan)
    assert f"  reference kcp: {KCP} pinned, v5.7.5" in text
    assert f"  reference quic: {QUIC} v0.60.0" in text
    assert "reference tcp:" not in text  # pinned only
